// capsa-old-kernel VERSION COMMAND [ARGS...]: runs COMMAND (and everything it starts) as
// if on an older kernel, so that the suites exercise capsa's fallbacks on the test
// machine's new one. VERSION is 4.18 (RHEL 8) or 5.14 (RHEL 9):
//  * every system call the kernel gained after VERSION fails with ENOSYS, as it does
//    there (openat2, clone3, pidfd_open, close_range, faccessat2, the new mount API, ...);
//  * 4.18 also refuses overlayfs in a user namespace (Linux 5.11 allowed it): a
//    seccomp user notification shows this process every mount(2), and an "overlay"
//    mount from a namespace other than ours is answered EPERM, as 4.18's
//    mount answers it; every other mount goes on untouched.
// Idmapped mounts need mount_setattr (5.12), which 4.18 mode already refuses; capsa
// makes none. The filter is inherited across fork and exec and cannot be removed, so
// nothing under COMMAND escapes it. COMMAND sees CAPSA_TEST_KERNEL=VERSION. Exits with
// COMMAND's status.
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

struct NewSyscall {
  int number;  // the same on every architecture from 424 on (the kernel unified them)
  int major;   // the release that added it
  int minor;
  const char* name;
};

// System calls since 4.18, from the kernel's syscall_64.tbl.
constexpr std::array<NewSyscall, 46> kNewSyscalls{{
    {424, 5, 1, "pidfd_send_signal"},
    {425, 5, 1, "io_uring_setup"},
    {426, 5, 1, "io_uring_enter"},
    {427, 5, 1, "io_uring_register"},
    {428, 5, 2, "open_tree"},
    {429, 5, 2, "move_mount"},
    {430, 5, 2, "fsopen"},
    {431, 5, 2, "fsconfig"},
    {432, 5, 2, "fsmount"},
    {433, 5, 2, "fspick"},
    {434, 5, 3, "pidfd_open"},
    {435, 5, 3, "clone3"},
    {436, 5, 9, "close_range"},
    {437, 5, 6, "openat2"},
    {438, 5, 6, "pidfd_getfd"},
    {439, 5, 8, "faccessat2"},
    {440, 5, 10, "process_madvise"},
    {441, 5, 11, "epoll_pwait2"},
    {442, 5, 12, "mount_setattr"},
    {443, 5, 14, "quotactl_fd"},
    {444, 5, 13, "landlock_create_ruleset"},
    {445, 5, 13, "landlock_add_rule"},
    {446, 5, 13, "landlock_restrict_self"},
    {447, 5, 14, "memfd_secret"},
    {448, 5, 15, "process_mrelease"},
    {449, 5, 16, "futex_waitv"},
    {450, 6, 0, "set_mempolicy_home_node"},
    {451, 6, 5, "cachestat"},
    {452, 6, 6, "fchmodat2"},
    {453, 6, 6, "map_shadow_stack"},
    {454, 6, 7, "futex_wake"},
    {455, 6, 7, "futex_wait"},
    {456, 6, 7, "futex_requeue"},
    {457, 6, 8, "statmount"},
    {458, 6, 8, "listmount"},
    {459, 6, 8, "lsm_get_self_attr"},
    {460, 6, 8, "lsm_set_self_attr"},
    {461, 6, 8, "lsm_list_modules"},
    {462, 6, 10, "mseal"},
    {463, 6, 13, "setxattrat"},
    {464, 6, 13, "getxattrat"},
    {465, 6, 13, "listxattrat"},
    {466, 6, 13, "removexattrat"},
    {467, 6, 15, "open_tree_attr"},
    {468, 6, 17, "file_getattr"},
    {469, 6, 17, "file_setattr"},
}};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "capsa-old-kernel: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(125);
}

bool newer(const NewSyscall& call, int major, int minor) {
  return call.major > major || (call.major == major && call.minor > minor);
}

// Loads the filter in this (child) process; returns the notification descriptor, or -1.
int load_filter(int major, int minor, bool refuse_userns_overlay) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) fail("seccomp_init");
  // Root needs no no_new_privs; keeping it off lets the suites' setuid tools work.
  if (::geteuid() == 0) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  for (const NewSyscall& call : kNewSyscalls)
    if (newer(call, major, minor) && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), call.number, 0) != 0)
      fail(std::string("adding ") + call.name + " to the filter");
  if (refuse_userns_overlay && seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(mount), 0) != 0)
    fail("adding mount to the filter");
  if (int rc = seccomp_load(ctx); rc != 0) {
    errno = -rc;
    fail("loading the seccomp filter");
  }
  int notify = refuse_userns_overlay ? seccomp_notify_fd(ctx) : -1;
  seccomp_release(ctx);
  return notify;
}

// One byte with room for one descriptor beside it (SCM_RIGHTS): what passes the
// notification descriptor from the filtered child to this process.
struct OneDescriptorMessage {
  char byte = 0;
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};

  OneDescriptorMessage() {
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
  }
  OneDescriptorMessage(const OneDescriptorMessage&) = delete;
  OneDescriptorMessage& operator=(const OneDescriptorMessage&) = delete;
};

void send_fd(int socket, int fd) {
  OneDescriptorMessage m;
  cmsghdr* header = CMSG_FIRSTHDR(&m.message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof fd);
  if (::sendmsg(socket, &m.message, 0) != 1) fail("passing the notification descriptor");
}

int receive_fd(int socket) {
  OneDescriptorMessage m;
  if (::recvmsg(socket, &m.message, 0) != 1) return -1;
  cmsghdr* header = CMSG_FIRSTHDR(&m.message);
  if (header == nullptr || header->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
  return fd;
}

std::string user_namespace_of(const std::string& pid) {
  std::array<char, 64> link{};
  ssize_t n = ::readlink(("/proc/" + pid + "/ns/user").c_str(), link.data(), link.size() - 1);
  return n > 0 ? std::string(link.data(), static_cast<size_t>(n)) : std::string();
}

// The file system type a mount(2) names, read from the caller's memory.
std::string fstype_of(pid_t pid, unsigned long long address) {
  if (address == 0) return {};
  std::array<char, 32> buffer{};
  iovec local{buffer.data(), buffer.size() - 1};
  iovec remote{reinterpret_cast<void*>(address), buffer.size() - 1};  // NOLINT(performance-no-int-to-ptr)
  if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) <= 0) return {};
  return {buffer.data()};
}

// Answers mount notifications until `child` has ended; returns its wait status.
int supervise(pid_t child, int notify) {
  const std::string ours = user_namespace_of("self");
  seccomp_notif* request = nullptr;
  seccomp_notif_resp* response = nullptr;
  if (seccomp_notify_alloc(&request, &response) != 0) fail("seccomp_notify_alloc");
  int status = 0;
  for (;;) {
    pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    pollfd ready{notify, POLLIN, 0};
    if (::poll(&ready, 1, 100) <= 0 || (ready.revents & POLLIN) == 0) continue;
    std::memset(request, 0, sizeof *request);
    if (seccomp_notify_receive(notify, request) != 0) continue;  // the caller was interrupted
    const auto pid = static_cast<pid_t>(request->pid);
    const bool refused =
        fstype_of(pid, request->data.args[2]) == "overlay" && user_namespace_of(std::to_string(pid)) != ours;
    std::memset(response, 0, sizeof *response);
    response->id = request->id;
    if (refused) {
      response->error = -EPERM;
    } else {
      response->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    }
    seccomp_notify_respond(notify, response);  // fails only if the caller has gone
  }
  seccomp_notify_free(request, response);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: capsa-old-kernel 4.18|5.14 COMMAND [ARGS...]\n");
    return 125;
  }
  const std::string_view version = argv[1];
  int major = 0, minor = 0;
  if (std::sscanf(argv[1], "%d.%d", &major, &minor) != 2 || (version != "4.18" && version != "5.14")) {
    std::fprintf(stderr, "capsa-old-kernel: unknown kernel %s (use 4.18 or 5.14)\n", argv[1]);
    return 125;
  }
  const bool refuse_userns_overlay = major < 5 || (major == 5 && minor < 11);
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) fail("socketpair");
  pid_t child = ::fork();
  if (child < 0) fail("fork");
  if (child == 0) {
    ::close(sockets[0]);
    int notify = load_filter(major, minor, refuse_userns_overlay);
    if (notify >= 0) {
      send_fd(sockets[1], notify);
      ::close(notify);
    }
    ::close(sockets[1]);
    // For the few tests that must name a feature this kernel lacks instead of using it.
    ::setenv("CAPSA_TEST_KERNEL", argv[1], 1);
    ::execvp(argv[2], argv + 2);
    fail(std::string("running ") + argv[2]);
  }
  ::close(sockets[1]);
  int status = 0;
  if (refuse_userns_overlay) {
    int notify = receive_fd(sockets[0]);
    if (notify < 0) {
      ::waitpid(child, &status, 0);
      return 125;
    }
    status = supervise(child, notify);
  } else if (::waitpid(child, &status, 0) != child) {
    fail("waiting for the command");
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
