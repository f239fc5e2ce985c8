#include "runtime/fakeroot_action.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "runtime/seccomp_fakeroot.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

// What the build's emulated mode gives apt too (runtime/sandbox_run.cpp).
constexpr std::string_view kAptKeepsRoot = "APT::Sandbox::User \"root\";\n";

// The apt configuration as a sealed memfd that the command inherits; its path inside.
std::string apt_configuration_path() {
  // Not close-on-exec: apt, started by the command, opens it through /proc/self/fd.
  UniqueFd fd(::memfd_create("capsa-fakeroot-apt.conf", MFD_ALLOW_SEALING));
  if (!fd) throw_errno("memfd for the fakeroot apt configuration");
  write_all(fd.get(), {reinterpret_cast<const std::uint8_t*>(kAptKeepsRoot.data()), kAptKeepsRoot.size()});
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0)
    throw_errno("sealing the fakeroot apt configuration");
  return "/proc/self/fd/" + std::to_string(fd.release());
}

}  // namespace

RootMode fakeroot_mode(const FakerootRequest& request) {
  const RootMode mode = chosen_fakeroot_mode(request.ignore_subuid);
  log::verbose({"--fakeroot: ", root_mode_name(mode),
                mode == RootMode::fakeroot_emulated && request.ignore_emulation ? ", without the emulation" : ""});
  return mode;
}

void enter_fakeroot_namespaces(RootMode mode) {
  become_fakeroot(mode);
  if (::unshare(CLONE_NEWNS) != 0) throw_errno("creating a mount namespace for the fakeroot container");
}

void start_root_emulation(RootMode mode, bool ignore_emulation, bool proc_mounted, EnvMap& env) {
  if (mode != RootMode::fakeroot_emulated || ignore_emulation) return;
  try {
    install_fakeroot_seccomp_filter();
  } catch (const SystemError& refused) {
    log::warning({"--fakeroot: the root emulation is not available (", refused.what(),
                  "): only uid 0 is mapped, changing owners or users will fail"});
    return;
  }
  if (proc_mounted && !env.contains("APT_CONFIG")) env["APT_CONFIG"] = apt_configuration_path();
}

}  // namespace capsa::runtime
