#pragma once
// The namespaces a container gets. Root: a private mount namespace (with -u/--userns,
// like everyone else, also a user namespace mapping only itself). Anyone else: a user
// namespace in which they keep their own uid and gid (no root inside, no setuid helper),
// plus a mount namespace. Network, IPC and PID namespaces stay the host's: MPI and NCCL
// need them (docs/running.md, docs/mpi-and-slurm.md).
#include <sys/types.h>

namespace capsa::runtime {

struct Identity {
  uid_t uid;
  gid_t gid;
  bool user_namespace = false;  // -u/--userns: root too gets a user namespace (uid 0 mapped to itself)
};

// Must be called while the process has one thread (unshare(CLONE_NEWUSER) requires it).
// Afterwards the process holds every capability inside the new namespaces until it
// execs the command (which, not being uid 0 there, keeps none).
void enter_container_namespaces(const Identity& caller);

// Throws the SystemError for unshare(CLONE_NEWUSER) failing with `err`, in the words of
// the setting that causes it (user namespaces disabled, restricted, at their limit).
[[noreturn]] void explain_user_namespace_failure(int err);

// Stops mount events from propagating back to the host. `receive_from_host` (the
// configuration's `mount slave`, Apptainer's default): the host's later mounts (autofs)
// still appear in the container; otherwise it sees none.
void make_mounts_private(bool receive_from_host = false);

}  // namespace capsa::runtime
