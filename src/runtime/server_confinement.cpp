#include "runtime/server_confinement.hpp"

#include <grp.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "util/error.hpp"

namespace capsa::runtime {
namespace {

struct ReleaseFilter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

// What a served file system never needs. Names an architecture lacks are skipped.
constexpr const char* kRefusedCalls[] = {
    // the mount table and namespaces
    "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig", "fspick", "move_mount",
    "open_tree", "mount_setattr", "setns", "unshare",
    // running something else, or reaching into another process
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    // the network (its log goes to an inherited descriptor)
    "socket", "socketpair",
    // the kernel itself
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff",
    "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "open_by_handle_at",
    "name_to_handle_at", "mknod", "mknodat", "acct", "quotactl", "syslog",
    // identity: it never changes again
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
    "capset"};

constexpr const char* kIoUringCalls[] = {"io_uring_setup", "io_uring_enter", "io_uring_register"};

void check(int rc, const std::string& what) {
  if (rc < 0) throw SystemError("confining root's FUSE server: " + what, -rc);
}

void install_filter(bool keeps_io_uring) {
  std::unique_ptr<void, ReleaseFilter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) throw Error("confining root's FUSE server: seccomp_init failed");
  auto refuse = [&](const char* name) {
    const int call = seccomp_syscall_resolve_name(name);
    if (call == __NR_SCMP_ERROR) return;  // not on this architecture
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), call, 0), std::string("refusing ") + name);
  };
  for (const char* name : kRefusedCalls) refuse(name);
  if (!keeps_io_uring)
    for (const char* name : kIoUringCalls) refuse(name);
  check(seccomp_load(ctx.get()), "loading the filter");
}

// Every capability set emptied, for a root whose ids could not be changed.
void drop_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  if (::syscall(SYS_capset, &header, none) != 0) throw_errno("confining root's FUSE server: capset");
}

}  // namespace

void confine_root_fuse_server(bool keeps_io_uring) {
  // Groups first, the uid last: changing all three of the real, effective and saved uid
  // away from 0 clears every capability set (no PR_SET_KEEPCAPS here). Root of a user
  // namespace of its own (capsa run as root inside another container) may have no 65534
  // mapped, or setgroups denied: it keeps its ids and loses its capabilities instead.
  const bool switched = ::setgroups(0, nullptr) == 0 &&
                        ::setresgid(kConfinedServerGid, kConfinedServerGid, kConfinedServerGid) == 0 &&
                        ::setresuid(kConfinedServerUid, kConfinedServerUid, kConfinedServerUid) == 0;
  if (!switched) drop_capabilities();
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw_errno("confining root's FUSE server: no_new_privs");
  install_filter(keeps_io_uring);
}

}  // namespace capsa::runtime
