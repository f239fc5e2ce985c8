#pragma once
// Running commands as root-in-the-container inside a writable sandbox directory: what
// `capsa build` needs for %post and %test, and for unpacking/packing a sandbox with its
// ownership intact. Three ways to be root (docs/build.md):
//   real_root          the caller is root: a private mount namespace, no user namespace.
//   fakeroot_subid     a user namespace mapping 0 to the caller and 1..N to the caller's
//                      /etc/subuid and /etc/subgid ranges (newuidmap/newgidmap, package
//                      `uidmap`): chown to any mapped id really happens on disk.
//   fakeroot_emulated  a user namespace mapping only 0 to the caller, plus a seccomp
//                      filter that makes ownership and identity calls (chown*, setuid*,
//                      setgroups, ...) succeed without effect, as Charliecloud's --seccomp.
//                      Everything on disk stays owned by the caller.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "convert/pack.hpp"
#include "runtime/bind_spec.hpp"
#include "runtime/root_mode.hpp"

namespace capsa::runtime {

struct SandboxCommand {
  std::string rootfs;                  // a writable directory tree (the sandbox)
  std::vector<std::string> argv;       // e.g. {"/bin/sh", "-e", "/.build-script"}; argv[0] looked up in rootfs
  std::vector<std::string> env;        // the complete environment, K=V
  std::vector<BindSpec> binds;         // the build's --bind list (destinations created in rootfs if missing)
  RootMode mode = RootMode::real_root;
  bool nv = false;                     // bind the host's NVIDIA driver files (as `exec --nv`)
  bool rocm = false;                   // bind the host's ROCm driver files (as `exec --rocm`)
  std::string cwd = "/";               // inside the container
  // The root as `test` sees a sandbox (%test): read-only, or with writable_tmpfs under an
  // overlay whose upper layer is a tmpfs, so writes succeed and vanish with the command.
  bool read_only_root = false;
  bool writable_tmpfs = false;
  // --nvccli: nvidia-container-cli configures the driver on the mounted root before the
  // command starts (instead of `nv`'s bind list); a read-only root gets the tmpfs overlay.
  bool nvccli = false;
  // --ignore-fakeroot-command: fakeroot_emulated without the seccomp emulation (only uid 0
  // is mapped; changing owners fails), as Apptainer's root-mapped namespace without the
  // `fakeroot` command.
  bool no_root_emulation = false;
};

// Runs argv inside rootfs (mount namespace; host network; /proc, /sys, /dev, /tmp, host
// resolv.conf/hosts bound in for the duration), waits, returns the exit status (128+signal
// when killed). Leaves nothing mounted: every mount lives in a mount namespace that dies
// with the child. The command's stdin/stdout/stderr are the caller's. `mode` may be
// fakeroot_auto (resolved with resolve_root_mode). Throws capsa::Error when the sandbox
// cannot be set up (the message says why); a command that fails is only an exit status.
int run_in_sandbox(const SandboxCommand& command);

// Runs `body` in a child process that is root in the user namespace `mode` describes
// (real_root: no user namespace, a plain child; fakeroot_auto resolved first), without a
// seccomp filter, and returns what body returned (its exit status). Use it for work on a
// sandbox that must see container ids: unpacking an image with its owners kept
// (fakeroot_subid), packing files the caller outside could not read. The child shares
// nothing with the parent after fork but open fds and memory copies: results travel back
// only through the return value or fds. An exception thrown by body is rethrown in the
// parent as capsa::Error with the same message. SIGINT/SIGTERM/SIGHUP have their default
// action in the child; when capsa's interrupt handlers (util/interrupt.hpp) saw one, the
// parent throws Interrupted after reaping the child (run_in_sandbox too).
int run_in_user_namespace(RootMode mode, const std::function<int()>& body);

// SIF/squashfs -> sandbox and sandbox -> squashfs the way a build in `mode` needs them:
// fakeroot_subid works inside its user namespace (owners kept as subordinate ids on disk,
// every file readable while packing); real_root in this process, owners exact;
// fakeroot_emulated in this process, everything owned by the caller on disk and recorded
// as root in the image (owner_as_root/group_as_root set to the caller). pack_sandbox
// returns the bytes written at `offset` of `fd`, as convert::pack_directory.
void unpack_sandbox(const std::string& image_path, const std::string& directory, RootMode mode);
std::uint64_t pack_sandbox(const std::string& directory, int fd, std::uint64_t offset, RootMode mode,
                           convert::PackOptions options = {});

// Removes a sandbox tree made in `mode` (by unpack_to_directory inside
// run_in_user_namespace, or by commands run_in_sandbox ran): entries owned by subordinate
// ids can only be removed from inside the namespace, and directories made read-only
// (0555, 0000) are made writable on the way. Never follows symlinks. Absent: no error.
void remove_sandbox(const std::string& path, RootMode mode);

}  // namespace capsa::runtime
