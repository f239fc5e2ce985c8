#pragma once
// `-f/--fakeroot` for exec, run, shell and test (docs/fakeroot.md): the container runs as
// uid 0 and gid 0 of a user namespace, in the order `build --fakeroot` uses:
//   1. subordinate ids (the caller's /etc/subuid and /etc/subgid ranges): 0 is the
//      caller, 1..N the range; chown inside really happens;
//   2. else one id mapped (0 is the caller) plus the seccomp root emulation of the build
//      (runtime/seccomp_fakeroot.hpp), capsa's counterpart of Apptainer's use of the
//      `fakeroot` command in its root-mapped namespace;
//   3. else, when the emulation is turned off (--ignore-fakeroot-command) or the kernel
//      refuses its filter, the one mapped id alone.
// Root gets the same user namespace (0 mapped to itself), as Apptainer gives root one.
#include <string>

#include "runtime/environment.hpp"
#include "runtime/root_mode.hpp"

namespace capsa::runtime {

struct FakerootRequest {
  bool ignore_subuid = false;     // --ignore-subuid: never use the subordinate ids
  bool ignore_emulation = false;  // --ignore-fakeroot-command: no seccomp emulation
};

// The mode for this request, chosen before anything is changed (CAPSA_FAKEROOT_MODE
// honoured as for build): fakeroot_subid or fakeroot_emulated.
RootMode fakeroot_mode(const FakerootRequest& request);

// Makes this process root of the mode's user namespace and of a new mount namespace
// owned by it. Must be called while the process has one thread.
void enter_fakeroot_namespaces(RootMode mode);

// Just before the command's exec, in the emulated mode unless `ignore_emulation`: loads
// the seccomp filter and, so that apt stays root (it checks that its switch to _apt took
// effect, which the filter only pretends), names a configuration saying so in APT_CONFIG
// when the caller set none and /proc is mounted inside (`proc_mounted`): a sealed memfd
// left open across the exec, read through /proc/self/fd. A kernel that refuses the
// filter leaves the single mapped id, with a warning.
void start_root_emulation(RootMode mode, bool ignore_emulation, bool proc_mounted, EnvMap& env);

}  // namespace capsa::runtime
