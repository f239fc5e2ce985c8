#include "runtime/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

void write_proc_file(const char* path, const std::string& text) {
  UniqueFd fd = open_file(path, O_WRONLY);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw_errno(path);
}

std::string first_line(const char* path) {
  std::string text;
  if (UniqueFd fd{::open(path, O_RDONLY | O_CLOEXEC)}) {
    char buf[64];
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) text.assign(buf, static_cast<std::size_t>(n));
  }
  return text.substr(0, text.find('\n'));
}

}  // namespace

[[noreturn]] void explain_user_namespace_failure(int err) {
  std::string why;
  if (first_line("/proc/sys/user/max_user_namespaces") == "0")
    why = "user namespaces are disabled on this machine (/proc/sys/user/max_user_namespaces is 0)";
  else if (first_line("/proc/sys/kernel/unprivileged_userns_clone") == "0")
    why = "unprivileged user namespaces are disabled on this machine (kernel.unprivileged_userns_clone is 0)";
  else if (first_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1")
    why = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1)";
  else if (err == ENOSPC)
    why = "the limit of user namespaces is reached (/proc/sys/user/max_user_namespaces)";
  else
    why = "the kernel refused a user namespace";
  throw SystemError("cannot create a user namespace: " + why + ": " + std::strerror(err) +
                        " (unprivileged containers need them: ask the administrator to enable user namespaces, "
                        "or run as root)",
                    err, SystemError::kPreformatted);
}

void enter_container_namespaces(const Identity& caller) {
  if (caller.uid == 0 && !caller.user_namespace) {
    if (::unshare(CLONE_NEWNS) != 0) throw_errno("creating a mount namespace");
    return;
  }
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) explain_user_namespace_failure(errno);
  // The caller stays who they are: their uid and gid map to themselves, nothing else.
  // setgroups must be denied before an unprivileged process may write gid_map.
  write_proc_file("/proc/self/setgroups", "deny");
  write_proc_file("/proc/self/uid_map", std::to_string(caller.uid) + " " + std::to_string(caller.uid) + " 1\n");
  write_proc_file("/proc/self/gid_map", std::to_string(caller.gid) + " " + std::to_string(caller.gid) + " 1\n");
}

void make_mounts_private(bool receive_from_host) {
  if (::mount(nullptr, "/", nullptr, MS_REC | (receive_from_host ? MS_SLAVE : MS_PRIVATE), nullptr) != 0)
    throw_errno("making mounts private");
}

}  // namespace capsa::runtime
