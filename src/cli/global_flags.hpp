#pragma once
// The flags Apptainer takes before the command (cmd/internal/cli/apptainer.go):
// -s/--silent, -q/--quiet, -d/--debug, -v/--verbose, --nocolor, -c/--config FILE,
// --build-config.
// Job scripts write `singularity -s exec ...`, Snakemake `singularity --quiet --silent exec`.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace capsa::cli {

// Registers the flags on the top-level app; when parsing is complete (before any command
// runs) they set the log level: --silent errors only, --quiet warnings too, --verbose and
// --debug more than the default.
void add_global_flags(CLI::App& app);

// Whether --quiet or --silent came before the command: no progress, no "Wrote ..." lines.
bool quiet_output();

// The FILE of -c/--config FILE, "" when not given.
const std::string& config_flag();

// Whether --build-config was given (cli/site_config.hpp says what it means).
bool build_config_flag();

// How many of `args` (program name excluded) are global flags and their values, so that
// the lean runner can find the command after them.
std::size_t global_flag_words(const std::vector<std::string>& args);

}  // namespace capsa::cli
