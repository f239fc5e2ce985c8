#pragma once
// The ways capsa is root inside a container without being root outside (docs/fakeroot.md),
// shared by `build --fakeroot` (runtime/sandbox_run.hpp) and the actions' `--fakeroot`
// (runtime/fakeroot_action.hpp):
//   real_root          the caller is root: no user namespace (build only).
//   fakeroot_subid     a user namespace mapping 0 to the caller and 1..N to the caller's
//                      /etc/subuid and /etc/subgid ranges (newuidmap/newgidmap, package
//                      `uidmap`): chown to any mapped id really happens on disk.
//   fakeroot_emulated  a user namespace mapping only 0 to the caller; build and the
//                      actions add a seccomp filter (runtime/seccomp_fakeroot.hpp) that
//                      makes ownership and identity calls succeed without effect.
//                      Everything on disk stays owned by the caller.
#include <cstdint>
#include <optional>
#include <string>

namespace capsa::runtime {

enum class RootMode { real_root, fakeroot_subid, fakeroot_emulated, fakeroot_auto };

// "real root", "fakeroot (subuid/subgid)", "fakeroot (emulated)": for messages.
const char* root_mode_name(RootMode mode);

// fakeroot_auto -> fakeroot_subid if the caller has /etc/subuid and /etc/subgid ranges and
// newuidmap/newgidmap exist, else fakeroot_emulated. real_root when euid is 0 and asked
// for real_root. Throws Error for real_root asked by a non-root caller, and for
// fakeroot_subid when the ranges or the helpers are missing (the message says which).
RootMode resolve_root_mode(RootMode requested);

// The fakeroot mode `--fakeroot` gets, resolved: CAPSA_FAKEROOT_MODE=subid|emulated|auto
// (unset or empty: auto) picks one; `ignore_subuid` (Apptainer's --ignore-subuid) turns
// subid and auto into emulated. Throws Error for another value of the variable, and as
// resolve_root_mode does.
RootMode chosen_fakeroot_mode(bool ignore_subuid = false);

// One contiguous range of subordinate ids, as a line of /etc/subuid: NAME:START:COUNT.
struct SubidRange {
  std::uint32_t start = 0;
  std::uint32_t count = 0;
};
// The caller's first range in `file` (/etc/subuid or /etc/subgid), matched by user name
// or by numeric uid as shadow-utils does; nullopt when it has none.
std::optional<SubidRange> caller_subid_range(const std::string& file);

// Makes the calling process uid and gid 0 of a new user namespace, with every capability
// in it, as `mode` (resolved: fakeroot_subid or fakeroot_emulated) maps ids; nothing else
// (no mount namespace, no seccomp filter). Subordinate ids: a short-lived child creates
// the namespace, newuidmap/newgidmap map it, this process joins it (setns) and drops its
// supplementary groups. Emulated: unshare, and the one-id maps written by this process
// (setgroups denied, so the host's supplementary groups stay, unmapped). Must be called
// while the process has one thread. Throws Error or SystemError saying what failed.
void become_fakeroot(RootMode mode);

}  // namespace capsa::runtime
