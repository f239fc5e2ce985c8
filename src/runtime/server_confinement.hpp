#pragma once
// Root's FUSE servers (a SIF's squashfs, an ext3 overlay) parse files that a user may have
// written, and may keep writing while they are served. Once their mount exists they need
// no privilege at all: the image and /dev/fuse are open descriptors, and the container is
// watched through a pidfd or a /proc directory opened before. So a root server gives up
// root before it reads its first request: it becomes the overflow user (65534) with no
// groups and no capabilities, sets no_new_privs, and installs a seccomp filter that
// refuses (EPERM) what a hijacked server would reach for first: mounts and namespaces,
// exec, ptrace and other processes' memory, new sockets, modules, keys, BPF and perf.
// bubblewrap and crun apply the same idea to their own helpers.
//
// Not for unprivileged servers: they run as their user already, and that user could
// start an unconfined server of their own anyway.
#include <sys/types.h>

namespace capsa::runtime {

// The uid and gid a confined server runs as (the kernel's overflow ids, "nobody").
inline constexpr uid_t kConfinedServerUid = 65534;
inline constexpr gid_t kConfinedServerGid = 65534;

// Confines the calling process as above. Only for a server root mounted in the host's user
// namespace: uid 0 inside a user namespace (--fakeroot, --userns, every unprivileged
// container) is the user already, and may not drop its groups. `keeps_io_uring`: the ext3 server's FUSE over io_uring
// is set up later and needs io_uring_setup/io_uring_enter/io_uring_register. Throws Error when a step fails: a server
// that could not be confined must not serve.
void confine_root_fuse_server(bool keeps_io_uring);

}  // namespace capsa::runtime
