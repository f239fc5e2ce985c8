#pragma once
// Each file cmd_<name>.cpp registers one top-level command on the CLI11 app.
#include <CLI/CLI.hpp>

namespace capsa::cli {

void add_sif_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_version_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_action_commands(CLI::App& app);
void add_pull_command(CLI::App& app);  // exec, run, shell, test, run-help
void add_build_command(CLI::App& app);

// Current time in Unix seconds, or SOURCE_DATE_EPOCH when set (reproducible images).
std::int64_t now_for_images();

}  // namespace capsa::cli
