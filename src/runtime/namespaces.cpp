#include "runtime/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

void write_proc_file(const char* path, const std::string& text) {
  UniqueFd fd = open_file(path, O_WRONLY);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw_errno(path);
}

}  // namespace

void enter_container_namespaces(const Identity& caller) {
  if (caller.uid == 0 && !caller.user_namespace) {
    if (::unshare(CLONE_NEWNS) != 0) throw_errno("creating a mount namespace");
    return;
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    int err = errno;
    throw SystemError(
        "creating a user namespace (unprivileged containers need user namespaces: check "
        "/proc/sys/user/max_user_namespaces, and on Ubuntu the AppArmor userns restriction)",
        err);
  }
  // The caller stays who they are: their uid and gid map to themselves, nothing else.
  // setgroups must be denied before an unprivileged process may write gid_map.
  write_proc_file("/proc/self/setgroups", "deny");
  write_proc_file("/proc/self/uid_map", std::to_string(caller.uid) + " " + std::to_string(caller.uid) + " 1\n");
  write_proc_file("/proc/self/gid_map", std::to_string(caller.gid) + " " + std::to_string(caller.gid) + " 1\n");
}

void make_mounts_private() {
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) throw_errno("making mounts private");
}

}  // namespace capsa::runtime
