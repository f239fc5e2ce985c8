#pragma once
// The command line as data, read from the one CLI11 definition capsa parses with, so
// that --help, the shell completions and the man pages cannot disagree.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace capsa::cli {

struct FlagInfo {
  std::vector<std::string> names;  // "-B", "--bind": short names first
  std::string value;               // "TEXT" for a flag that takes a value, "" for a switch
  std::string description;
};

struct CommandInfo {
  std::vector<std::string> path;  // {} for the program, {"sif", "add"} for `capsa sif add`
  std::string description;
  std::string footer;
  std::vector<FlagInfo> flags;  // the ones --help shows (hidden ones left out)
  std::vector<CommandInfo> subcommands;
};

// The visible commands and flags of `app`, recursively.
CommandInfo describe_commands(CLI::App& app);

}  // namespace capsa::cli
