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

}  // namespace capsa::cli
