#include "runtime/sandbox_run.hpp"

#include "util/error.hpp"

namespace capsa::runtime {

const char* root_mode_name(RootMode mode) {
  switch (mode) {
    case RootMode::real_root: return "real root";
    case RootMode::fakeroot_subid: return "fakeroot (subuid/subgid)";
    case RootMode::fakeroot_emulated: return "fakeroot (emulated)";
    case RootMode::fakeroot_auto: return "fakeroot";
  }
  return "?";
}

int run_in_sandbox(const SandboxCommand&) { throw Error("run_in_sandbox: not implemented yet"); }
RootMode resolve_root_mode(RootMode) { throw Error("resolve_root_mode: not implemented yet"); }
std::optional<SubidRange> caller_subid_range(const std::string&) { throw Error("caller_subid_range: not implemented yet"); }
int run_in_user_namespace(RootMode, const std::function<int()>&) { throw Error("run_in_user_namespace: not implemented yet"); }

}  // namespace capsa::runtime
