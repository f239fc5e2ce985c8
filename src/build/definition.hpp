#pragma once
// Apptainer definition files: the text of `capsa build TARGET recipe.def` parsed into
// stages (header keys and sections), with %arguments templating applied.
// Rules: docs/build.md (Apptainer's definition-file format).

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace capsa::build {

// One script-like section (%setup, %post, %environment, %runscript, %startscript, %test,
// %help, %pre). Repeated sections are concatenated, as Apptainer does.
struct Script {
  bool present = false;
  std::string args;  // text after the section name: "-c /bin/bash", "-x", ...
  std::string body;  // the lines of the section, each ending with '\n'
  int line = 0;      // line of the (first) %section line
};

// One line of a %files section: SOURCE [DESTINATION] (DESTINATION defaults to SOURCE).
struct FileCopy {
  std::string source;
  std::string destination;
  int line = 0;
};

// One %files section; `from_stage` is set for `%files from STAGE`.
struct FilesBlock {
  std::string section = "%files";  // named in errors
  std::string from_stage;
  std::vector<FileCopy> copies;
  int line = 0;
};

// One SCIF app (https://sci-f.github.io): the %app* sections that name it, as Apptainer's
// internal/pkg/build/apps/apps.go reads them. Repeated sections of one app are concatenated.
struct App {
  std::string name;
  int line = 0;  // the first section that names it
  Script install, run, env, test, help, start;
  std::vector<FileCopy> files;  // %appfiles: SOURCE [DESTINATION], relative to /scif/apps/NAME
  std::vector<std::pair<std::string, std::string>> labels;  // %applabels in order
};

struct Stage {
  // Header keys lower-cased, values trimmed, in file order (a repeated key keeps its
  // first position and its last value).
  std::vector<std::pair<std::string, std::string>> header;
  Script pre, setup, post, environment, runscript, startscript, test, help;
  std::vector<FilesBlock> files;
  std::vector<std::pair<std::string, std::string>> labels;  // %labels in order
  std::map<std::string, std::string> arguments;             // %arguments defaults
  std::vector<App> apps;                                    // SCIF apps in the order the file first names them
  std::string text;  // this stage's definition text after templating
  int line = 1;      // where the stage starts in the file

  // Header value for a lower-case key, empty when absent.
  std::string get(const std::string& key) const;
  bool has(const std::string& key) const;
  std::string bootstrap() const { return get("bootstrap"); }
  std::string name() const { return get("stage"); }
};

struct Definition {
  std::string file;           // the name errors are reported with
  std::string text;           // the whole file after templating
  std::vector<Stage> stages;  // at least one
};

struct ParseOptions {
  std::string file_name = "definition";              // for "file:line:" in errors
  std::map<std::string, std::string> build_args;     // --build-arg / --build-arg-file
  bool warn_unused_build_args = false;               // otherwise an unused one is an error
};

struct ParseResult {
  Definition definition;
  std::vector<std::string> warnings;
};

// Throws FormatError "FILE:LINE: problem (expected ...)" on any error.
ParseResult parse_definition(const std::string& text, const ParseOptions& options);

// Reads KEY=VALUE lines (blank lines and # comments skipped) as --build-arg-file does.
std::map<std::string, std::string> parse_build_arg_file(const std::string& text, const std::string& file_name);
// "KEY=VALUE" from --build-arg.
std::pair<std::string, std::string> parse_build_arg(const std::string& argument);

// Header keys Apptainer accepts (lower case); `otherurl<N>` matches any N.
bool is_valid_header_key(const std::string& lower_key);

}  // namespace capsa::build
