// The user namespaces of the root modes (sandbox_run.hpp): resolving a mode, and running
// a function as root of one in a child process.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/sandbox_run.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"
#include "util/process.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime {
namespace {

constexpr const char* kSubuidFile = "/etc/subuid";
constexpr const char* kSubgidFile = "/etc/subgid";


// newuidmap/newgidmap as shadow-utils installs them.
std::string find_helper(const char* name) {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/sbin", "/sbin"}) {
    std::string path = std::string(dir) + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

std::string caller_name() {
  if (passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  return "";
}

void write_byte(int fd) {
  char c = 1;
  while (::write(fd, &c, 1) < 0 && errno == EINTR) {
  }
}

bool read_byte(int fd) {
  char c = 0;
  for (;;) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    return n == 1;
  }
}

// Runs newuidmap/newgidmap for `child` and waits; the helper's own message goes to stderr.
void run_map_helper(const std::string& helper, const Process& child, const std::vector<std::string>& mapping) {
  std::vector<std::string> args = {helper, std::to_string(child.pid())};
  args.insert(args.end(), mapping.begin(), mapping.end());
  if (!run_to_end({.argv = args}).success()) {
    std::string command;
    for (const auto& a : args) command += (command.empty() ? "" : " ") + a;
    throw Error("setting up the fakeroot user namespace: `" + command + "` failed (check " +
                (helper.find("gid") != std::string::npos ? std::string(kSubgidFile) : std::string(kSubuidFile)) +
                " and that the helper is setuid root)");
  }
}

// In the child, right after fork: become root of a new user namespace as `mode` says.
// `ready` tells the parent the namespace exists; `mapped` is the parent's answer once it
// wrote the subordinate maps (fakeroot_subid only).
void enter_user_namespace(RootMode mode, uid_t uid, gid_t gid, int ready, int mapped) {
  if (mode == RootMode::real_root) return;
  if (::unshare(CLONE_NEWUSER) != 0) {
    int err = errno;
    throw SystemError("creating a user namespace for fakeroot (check /proc/sys/user/max_user_namespaces)", err);
  }
  if (mode == RootMode::fakeroot_subid) {
    write_byte(ready);
    if (!read_byte(mapped)) throw Error("setting up the fakeroot user namespace failed");
    // Supplementary groups of the host are unmapped (nogroup) here: drop them.
    if (::setgroups(0, nullptr) != 0) throw_errno("setgroups in the fakeroot namespace");
  } else {
    auto write_proc = [](const char* path, const std::string& text) {
      UniqueFd fd = open_file(path, O_WRONLY);
      if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw_errno(path);
    };
    write_proc("/proc/self/setgroups", "deny");
    write_proc("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n");
    write_proc("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n");
  }
  // The caller's ids map to 0: become root of the namespace for real (ids and caps).
  if (::setresgid(0, 0, 0) != 0) throw_errno("setresgid 0 in the fakeroot namespace");
  if (::setresuid(0, 0, 0) != 0) throw_errno("setresuid 0 in the fakeroot namespace");
}

}  // namespace

const char* root_mode_name(RootMode mode) {
  switch (mode) {
    case RootMode::real_root: return "real root";
    case RootMode::fakeroot_subid: return "fakeroot (subuid/subgid)";
    case RootMode::fakeroot_emulated: return "fakeroot (emulated)";
    case RootMode::fakeroot_auto: return "fakeroot";
  }
  return "?";
}

std::optional<SubidRange> caller_subid_range(const std::string& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  const std::string name = caller_name();
  const std::string uid = std::to_string(::getuid());
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string owner, start, count;
    if (!std::getline(fields, owner, ':') || !std::getline(fields, start, ':') || !std::getline(fields, count)) continue;
    if (owner != name && owner != uid) continue;
    try {
      std::size_t used = 0;
      unsigned long s = std::stoul(start, &used);
      if (used != start.size()) continue;
      unsigned long c = std::stoul(count, &used);
      if (used != count.size() || c == 0 || s > UINT32_MAX || c > UINT32_MAX - s) continue;
      return SubidRange{static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(c)};
    } catch (const std::exception&) {
      continue;  // a malformed line: shadow-utils skips it too
    }
  }
  return std::nullopt;
}

RootMode resolve_root_mode(RootMode requested) {
  switch (requested) {
    case RootMode::real_root:
      if (::geteuid() != 0) throw Error("building as root needs root (unprivileged: use --fakeroot)");
      return requested;
    case RootMode::fakeroot_emulated: return requested;
    case RootMode::fakeroot_subid:
    case RootMode::fakeroot_auto: {
      const bool ranges = caller_subid_range(kSubuidFile) && caller_subid_range(kSubgidFile);
      const bool helpers = !find_helper("newuidmap").empty() && !find_helper("newgidmap").empty();
      if (ranges && helpers) return RootMode::fakeroot_subid;
      if (requested == RootMode::fakeroot_auto) return RootMode::fakeroot_emulated;
      if (!ranges)
        throw Error("fakeroot with subordinate ids: " + caller_name() + " has no range in " + kSubuidFile + " and " +
                    kSubgidFile + " (ask an administrator, or use the emulated mode)");
      throw Error("fakeroot with subordinate ids: newuidmap/newgidmap not found (install the uidmap package)");
    }
  }
  return requested;
}

int run_in_user_namespace(RootMode requested, const std::function<int()>& body) {
  const RootMode mode = resolve_root_mode(requested);
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  std::optional<SubidRange> subuid, subgid;
  std::string newuidmap, newgidmap;
  if (mode == RootMode::fakeroot_subid) {
    subuid = caller_subid_range(kSubuidFile);
    subgid = caller_subid_range(kSubgidFile);
    newuidmap = find_helper("newuidmap");
    newgidmap = find_helper("newgidmap");
  }
  Pipe ready = make_pipe(), mapped = make_pipe(), errors = make_pipe();
  std::cout.flush();
  // The child: its result travels back as an exit status, its failure as a message.
  Process child = Process::start(
      [&] {
        ready.read_end.reset();
        mapped.write_end.reset();
        errors.read_end.reset();
        // Ctrl-C must end the child's work at once: capsa's own handlers (util/interrupt)
        // only set a flag that code in the child does not poll.
        for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal_number, SIG_DFL);
        int status = 255;
        try {
          enter_user_namespace(mode, uid, gid, ready.write_end.get(), mapped.read_end.get());
          status = body();
        } catch (const std::exception& e) {
          std::string message = e.what();
          write_all(errors.write_end.get(), {reinterpret_cast<const std::uint8_t*>(message.data()), message.size()});
        } catch (...) {
          std::string message = "unknown error in the fakeroot child";
          write_all(errors.write_end.get(), {reinterpret_cast<const std::uint8_t*>(message.data()), message.size()});
        }
        std::cout.flush();
        return status;
      },
      {.parent_death_signal = SIGKILL, .name = "the sandbox process"});
  ready.write_end.reset();
  mapped.read_end.reset();
  errors.write_end.reset();
  if (mode == RootMode::fakeroot_subid && read_byte(ready.read_end.get())) {
    // A helper that fails leaves the child waiting: it is killed and reaped on the way out.
    run_map_helper(newuidmap, child,
                   {"0", std::to_string(uid), "1", "1", std::to_string(subuid->start), std::to_string(subuid->count)});
    run_map_helper(newgidmap, child,
                   {"0", std::to_string(gid), "1", "1", std::to_string(subgid->start), std::to_string(subgid->count)});
    write_byte(mapped.write_end.get());
  }
  mapped.write_end.reset();
  // EOF at exit, or at exec (close-on-exec)
  std::string message = read_to_end(errors.read_end.get(), "reading the sandbox process's errors");
  ExitStatus status = child.wait();
  // The child died of the same Ctrl-C: unwind the caller (temporary sandboxes removed).
  throw_if_interrupted();
  if (!message.empty()) throw Error(message);
  return status.code();
}

}  // namespace capsa::runtime
