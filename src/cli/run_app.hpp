#pragma once
// Parsing the command line and reporting failures the same way in capsa and capsa-full:
// one line `PROGRAM: error: ...` on stderr and exit status 1.
#include <CLI/CLI.hpp>

#include "cli/invocation.hpp"

namespace capsa::cli {

int run_app(CLI::App& app, const Invocation& inv);

}  // namespace capsa::cli
