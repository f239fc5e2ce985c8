#include "cli/invocation.hpp"

#include <string_view>

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
  constexpr std::string_view flag = "--docker-password";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    char* value = nullptr;
    if (arg == flag && i + 1 < argc)
      value = argv[i + 1];
    else if (arg.size() > flag.size() && arg.substr(0, flag.size() + 1) == std::string(flag) + "=")
      value = argv[i] + flag.size() + 1;
    for (; value != nullptr && *value != '\0'; ++value) *value = '*';
  }
}

}  // namespace capsa::cli
