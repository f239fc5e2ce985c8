#pragma once
// Apptainer flags capsa does not carry out. Each is still known to the parser, so that a
// job script that uses one stops with a line naming the flag and why, before any image is
// looked up, instead of the flag being taken for the image's name.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace capsa::cli {

struct RefusedFlag {
  std::string names;  // CLI11 form: "-f,--fakeroot"
  bool takes_value;   // so that its value is not taken for the image
  std::string why;    // completes "--fakeroot is not supported (...)"
};

// Registers `flags` on `command`, hidden from --help. Parsing one throws capsa::Error
// "--fakeroot is not supported (why)" before the command runs.
void add_refused_flags(CLI::App& command, const std::vector<RefusedFlag>& flags);

// The lean runner's version: registers only those of `flags` that `args` name
// (cli/used_options.hpp's names_used). Every container start parses the command line, and
// registering the forty flags capsa refuses costs more than parsing the few it holds.
void add_refused_flags_in(CLI::App& command, const std::vector<RefusedFlag>& flags,
                          const std::vector<std::string>& args);

// Throws capsa::Error "unknown flag --X for exec" when what CLI11 left over starts with
// a flag: commands that end their flags at IMAGE would take it for the image.
void reject_unknown_flag(const std::string& command, const std::vector<std::string>& rest);

}  // namespace capsa::cli
