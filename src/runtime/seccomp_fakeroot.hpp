#pragma once
// Root emulation for unprivileged builds without subordinate ids (RootMode::fakeroot_emulated):
// in a user namespace that maps only uid/gid 0 to the caller, a package manager's
// chown to any other id, and its switches to other users (apt's _apt, dpkg's
// maintainer scripts), fail with EINVAL/EPERM. This seccomp filter makes those calls
// return success without doing anything, the approach of Charliecloud's `--seccomp`:
// files stay owned by the caller (recorded as root when packed), and a process that
// "switched" users keeps running as root-in-the-namespace.

namespace capsa::runtime {

// Installs the filter on the calling thread (inherited by children and kept across
// exec); sets no_new_privs. Throws SystemError when the kernel refuses it.
void install_fakeroot_seccomp_filter();

}  // namespace capsa::runtime
