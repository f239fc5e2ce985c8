#pragma once
// The container metadata `capsa inspect` shows, read through an image's files (the
// squashfs of a SIF's primary partition, read in place, or a sandbox directory: one
// implementation for both), and its output in Apptainer's formats.
// Sources inside the image: docs/running.md (the /.singularity.d tree).

#include <map>
#include <string>
#include <vector>

#include "image/image_files.hpp"
#include "sif/image.hpp"
#include "squashfs/reader.hpp"

namespace capsa::image {

// Apptainer's `inspect` flags. With none of the content flags set, labels are shown.
struct InspectOptions {
  bool labels = false;       // -l: /.singularity.d/labels.json
  bool deffile = false;      // -d: /.singularity.d/Singularity
  bool runscript = false;    // -r: /.singularity.d/runscript
  bool startscript = false;  // -s: /.singularity.d/startscript
  bool test = false;         // -t: /.singularity.d/test
  bool environment = false;  // -e: env/10-docker*.sh and env/9*-environment.sh
  bool helpfile = false;     // -H: /.singularity.d/runscript.help
  bool json = false;         // -j: one JSON document instead of plain sections
  bool all = false;          // --all: every section, as JSON (with every app's)
  bool list_apps = false;    // --list-apps: the SCIF apps' names
  std::string app;           // --app NAME: the sections of /scif/apps/NAME/scif instead
};

// The sections of one SCIF app (/scif/apps/NAME/scif), as Apptainer's AppAttributes.
struct AppMetadata {
  std::map<std::string, std::string> environment;  // in-image path -> script
  std::map<std::string, std::string> labels;
  std::string runscript;
  std::string startscript;
  std::string test;
  std::string helpfile;
};

// What Apptainer calls the container's attributes. Scripts have their trailing
// newlines removed, as Apptainer does; an empty string means absent (never shown).
struct Metadata {
  std::map<std::string, std::string> labels;
  std::string deffile;
  std::string runscript;
  std::string startscript;
  std::string test;
  std::string helpfile;
  std::map<std::string, std::string> environment;  // in-image path -> script
  std::map<std::string, AppMetadata> apps;         // --list-apps, --app, --all
  // Problems Apptainer only warns about (an unparsable labels.json); one line each.
  std::vector<std::string> warnings;
};

// The squashfs root filesystem of a SIF. Throws FormatError "<file>: no primary
// system partition", or naming the object when it is not (or does not hold) squashfs.
squashfs::Reader open_primary_squashfs(const sif::Image& image);

// Reads the sections `options` selects (only those) from an image's files. Throws Error
// for an --app the image does not have.
Metadata read_metadata(const ImageFiles& root, const InspectOptions& options);
// Same from a SIF's primary partition; the definition file falls back to the SIF's
// Deffile object when the image has no /.singularity.d/Singularity.
Metadata read_metadata(const sif::Image& image, const InspectOptions& options);

// Same from a sandbox directory or a SIF file at `path`.
Metadata read_metadata_at(const std::string& path, const InspectOptions& options);

// The labels of labels.json's `text` as Apptainer reads them (Go's json.Unmarshal into
// map[string]string). What Apptainer only warns about is appended to `warnings`, one
// line each, starting with `where`.
std::map<std::string, std::string> parse_labels(const std::string& text, const std::string& where,
                                                std::vector<std::string>& warnings);

// The exact text `apptainer inspect` prints for `metadata` (read with the same options).
std::string format_inspect(const Metadata& metadata, const InspectOptions& options);

}  // namespace capsa::image
