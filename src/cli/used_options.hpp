#pragma once
// The options of a command that one invocation can use. capsa-full sets up every option
// (its --help lists them all); the lean runner, which knows its arguments before it sets
// up its parser, registers only the options whose names they hold. CLI11 compares each
// new option's names with those of every option added before it, so registering the
// ninety flags of exec took 0.3 to 0.4 ms of every container start, where a command line
// names a handful (docs/performance.md). A name counts as held when an argument is the
// name or NAME=VALUE (--bind, --bind=/x), or for a one-letter name when the letter is in
// a single-dash argument (-B/x, -ce); taking too many is harmless, and -h/--help anywhere
// sets up all of them, so that the help stays whole.
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace capsa::cli {

// Whether any of `names` (CLI11's form: "-B,--bind") is held by `args`, as above.
bool names_used(std::string_view names, const std::vector<std::string>& args);

class UsedOptions {
 public:
  // `args`: the invocation's words; nullptr: every option is set up.
  UsedOptions(CLI::App& command, const std::vector<std::string>* args);

  bool wanted(std::string_view names) const { return args_ == nullptr || names_used(names, *args_); }

  template <typename T>
  void option(const std::string& names, T& value, const std::string& description) {
    if (wanted(names)) command_.add_option(names, value, description);
  }
  // An option whose values each take one argument (no `--bind a b`; `-B a -B b`).
  template <typename T>
  void list(const std::string& names, T& value, const std::string& description) {
    if (wanted(names)) command_.add_option(names, value, description)->allow_extra_args(false);
  }
  void flag(const std::string& names, bool& value, const std::string& description) {
    if (wanted(names)) command_.add_flag(names, value, description);
  }

 private:
  CLI::App& command_;
  const std::vector<std::string>* args_;  // nullptr: all
};

}  // namespace capsa::cli
