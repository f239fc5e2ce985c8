// The user namespaces of the root modes (root_mode.hpp): resolving a mode, becoming root
// of one, and running a function as root of one in a child process (sandbox_run.hpp).
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/namespaces.hpp"
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

void write_proc_file(const char* path, const std::string& text) {
  UniqueFd fd = open_file(path, O_WRONLY);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw_errno(path);
}

// fakeroot_subid: the setuid helpers must run outside the namespace they map (inside, its
// ids not mapped yet, their setuid bit means nothing), so a child creates the namespace
// and waits, the helpers map it from here, and this process joins it.
void join_subordinate_namespace() {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const std::optional<SubidRange> subuid = caller_subid_range(kSubuidFile);
  const std::optional<SubidRange> subgid = caller_subid_range(kSubgidFile);
  const std::string newuidmap = find_helper("newuidmap"), newgidmap = find_helper("newgidmap");
  if (!subuid || !subgid || newuidmap.empty() || newgidmap.empty()) resolve_root_mode(RootMode::fakeroot_subid);
  Pipe ready = make_pipe(), done = make_pipe();
  // The holder: creates the namespace, sends 0 (or the errno of its failure), and waits
  // for EOF.
  Process holder = Process::start(
      [&] {
        ready.read_end.reset();
        done.write_end.reset();
        const char result = ::unshare(CLONE_NEWUSER) == 0 ? 0 : static_cast<char>(errno);
        while (::write(ready.write_end.get(), &result, 1) < 0 && errno == EINTR) {
        }
        if (result == 0) read_byte(done.read_end.get());
        return 0;
      },
      {.parent_death_signal = SIGKILL, .name = "the fakeroot namespace holder"});
  ready.write_end.reset();
  done.read_end.reset();
  char result = 0;
  ssize_t n = 0;
  do {
    n = ::read(ready.read_end.get(), &result, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) throw Error("setting up the fakeroot user namespace: its holder process died");
  if (result != 0) explain_user_namespace_failure(result);
  run_map_helper(newuidmap, holder,
                 {"0", std::to_string(uid), "1", "1", std::to_string(subuid->start), std::to_string(subuid->count)});
  run_map_helper(newgidmap, holder,
                 {"0", std::to_string(gid), "1", "1", std::to_string(subgid->start), std::to_string(subgid->count)});
  UniqueFd ns = open_file("/proc/" + std::to_string(holder.pid()) + "/ns/user", O_RDONLY | O_CLOEXEC);
  if (::setns(ns.get(), CLONE_NEWUSER) != 0) throw_errno("joining the fakeroot user namespace");
  done.write_end.reset();  // the namespace lives on in this process
  holder.wait();
  // Supplementary groups of the host are unmapped (nogroup) here: drop them.
  if (::setgroups(0, nullptr) != 0) throw_errno("setgroups in the fakeroot namespace");
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

RootMode chosen_fakeroot_mode(bool ignore_subuid) {
  const char* chosen = std::getenv("CAPSA_FAKEROOT_MODE");
  const std::string wanted = chosen != nullptr ? chosen : "";
  if (!wanted.empty() && wanted != "subid" && wanted != "emulated" && wanted != "auto")
    throw Error("CAPSA_FAKEROOT_MODE=\"" + wanted + "\" is not a fakeroot mode (expected subid, emulated or auto)");
  if (ignore_subuid || wanted == "emulated") return RootMode::fakeroot_emulated;
  return resolve_root_mode(wanted == "subid" ? RootMode::fakeroot_subid : RootMode::fakeroot_auto);
}

void become_fakeroot(RootMode mode) {
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (mode == RootMode::fakeroot_subid) {
    join_subordinate_namespace();
  } else if (mode == RootMode::fakeroot_emulated) {
    if (::unshare(CLONE_NEWUSER) != 0) explain_user_namespace_failure(errno);
    write_proc_file("/proc/self/setgroups", "deny");
    write_proc_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n");
    write_proc_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n");
  } else {
    throw Error(std::string("become_fakeroot: ") + root_mode_name(mode) + " is not a resolved fakeroot mode");
  }
  // The caller's ids map to 0: become root of the namespace for real (ids and caps).
  if (::setresgid(0, 0, 0) != 0) throw_errno("setresgid 0 in the fakeroot namespace");
  if (::setresuid(0, 0, 0) != 0) throw_errno("setresuid 0 in the fakeroot namespace");
}

int run_in_user_namespace(RootMode requested, const std::function<int()>& body) {
  const RootMode mode = resolve_root_mode(requested);
  Pipe errors = make_pipe();
  std::cout.flush();
  // The child: its result travels back as an exit status, its failure as a message.
  Process child = Process::start(
      [&] {
        errors.read_end.reset();
        // Ctrl-C must end the child's work at once: capsa's own handlers (util/interrupt)
        // only set a flag that code in the child does not poll.
        for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal_number, SIG_DFL);
        int status = 255;
        try {
          if (mode != RootMode::real_root) become_fakeroot(mode);
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
  errors.write_end.reset();
  // EOF at exit, or at exec (close-on-exec)
  std::string message = read_to_end(errors.read_end.get(), "reading the sandbox process's errors");
  ExitStatus status = child.wait();
  // The child died of the same Ctrl-C: unwind the caller (temporary sandboxes removed).
  throw_if_interrupted();
  if (!message.empty()) throw Error(message);
  return status.code();
}

}  // namespace capsa::runtime
