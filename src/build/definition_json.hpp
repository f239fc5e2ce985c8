#pragma once
// `capsa build --json`: a definition in Apptainer's JSON form, the serialisation of its
// Definition struct (pkg/build/types/definition.go): one object per stage, or an array
// of them for a multi-stage build:
//   {"header": {"bootstrap": "docker", "from": "..."},
//    "imageData": {"labels": {...}, "imageScripts": {"help", "environment", "runScript",
//                  "test", "startScript": {"args": "", "script": "..."}}},
//    "buildData": {"files": [{"args": "", "files": [{"source", "destination"}]}],
//                  "buildScripts": {"pre", "setup", "post", "test", "arguments"}},
//    "customData": {"appinstall NAME": "...", ...}, "appOrder": ["NAME", ...]}
// It is turned into the definition's text form, as Apptainer's populateRaw writes it,
// and that text goes through parse_definition: templating, checks, the stage text the
// image keeps and everything after it are the text form's. "raw" and "fullraw" (base64
// copies of a text form) are ignored: the fields are what is built. Keys Apptainer does
// not have are ignored, as Go's JSON decoder ignores them.
#include <string>

#include "build/definition.hpp"

namespace capsa::build {

// The definition's text form; throws FormatError "FILE: ..." naming the JSON field at
// fault (or the JSON syntax error) when `json` is not such a definition.
std::string definition_text_from_json(const std::string& json, const std::string& file_name);

// definition_text_from_json, then parse_definition of that text. Errors the text parser
// finds name the line of the text form (`capsa inspect --deffile` of the image shows it).
ParseResult parse_definition_json(const std::string& json, const ParseOptions& options);

}  // namespace capsa::build
