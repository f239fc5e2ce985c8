#include "cli/invocation.hpp"

#include <algorithm>
#include <string_view>

#include "cli/global_flags.hpp"

namespace capsa::cli {

Invocation resolve_invocation(int argc, char** argv) {
  std::string_view called = argc > 0 ? argv[0] : "capsa";
  if (auto slash = called.rfind('/'); slash != std::string_view::npos) called.remove_prefix(slash + 1);

  Invocation inv;
  for (int i = 1; i < argc; ++i) inv.args.emplace_back(argv[i]);
  if (called == "singularity" || called == "apptainer") {
    inv.program_name = std::string(called);
  } else if (called == "run-singularity") {
    // `#!/usr/bin/env run-singularity` runs `run-singularity ./image.sif ARGS...`.
    inv.program_name = "capsa";
    inv.args.insert(inv.args.begin(), "run");
  } else {
    inv.program_name = "capsa";
  }
  return inv;
}

void hide_secret_arguments(int argc, char** argv) {
  // -p is --password only after `registry`, `keyserver` or `remote` (exec's -p is --pid,
  // which has no value); -P is `key newpair`'s --password.
  // The command is the word after the global flags: a container's own arguments that
  // happen to read "remote -p X" are left alone.
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  const std::size_t command = global_flag_words(args) + 1;
  const std::string_view called = command < static_cast<std::size_t>(argc) ? argv[command] : "";
  const bool registry = called == "registry" || called == "keyserver" || called == "remote";
  const bool key = called == "key";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    char* value = nullptr;
    for (std::string_view flag :
         {"--docker-password", "--password", registry ? "-p" : "--docker-password", key ? "-P" : "--docker-password"}) {
      if (arg == flag && i + 1 < argc)
        value = argv[i + 1];
      else if (arg.size() > flag.size() && arg.starts_with(flag) && arg[flag.size()] == '=')
        value = argv[i] + flag.size() + 1;
    }
    if (registry && arg.size() > 2 && arg.starts_with("-p") && arg[2] != '-') value = argv[i] + 2;  // -pVALUE
    if (key && arg.size() > 2 && arg.starts_with("-P") && arg[2] != '-') value = argv[i] + 2;       // -PVALUE
    for (; value != nullptr && *value != '\0'; ++value) *value = '*';
  }
}

}  // namespace capsa::cli
