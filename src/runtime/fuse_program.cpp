#include "runtime/fuse_program.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "util/detached_child.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"
#include "util/process.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime {
namespace {

constexpr auto kMountTimeout = std::chrono::seconds(10);

// In the child, before exec: CAP_SYS_ADMIN survives the exec as an ambient capability
// (a non-root uid loses every capability at exec otherwise). Root keeps its own.
void keep_mount_capability() {
  if (::geteuid() == 0) return;
  cap_t caps = cap_get_proc();
  if (caps == nullptr) return;
  // SYS_ADMIN to mount; DAC_OVERRIDE as Apptainer gives fuse-overlayfs
  // (containers/fuse-overlayfs#414): copying up a directory of the image it may not write.
  const cap_value_t kept[] = {CAP_SYS_ADMIN, CAP_DAC_OVERRIDE};
  cap_set_flag(caps, CAP_INHERITABLE, 2, kept, CAP_SET);
  cap_set_proc(caps);
  cap_free(caps);
  for (cap_value_t cap : kept) ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
}

std::string tail_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s.size() > 400 ? s.substr(s.size() - 400) : s;
}

}  // namespace

void mount_with_fuse_program(const FuseProgram& program) {
  const std::string executable = find_system_program(program.name);
  if (executable.empty())
    throw Error(program.name + " was not found (unprivileged overlays need it: install the " + program.name +
                " package, or run as root)");
  struct stat before {};
  if (::stat(program.mount_point.c_str(), &before) != 0) throw_errno(program.mount_point);
  // The program runs in a mount namespace of its own (a copy of the container's, made
  // before pivot_root): when it unmounts at the end it resolves its mount point there,
  // never through the container's root, which may lie on its own file system and
  // would deadlock it. Its mount reaches the container through a shared mount point.
  if (::mount(program.mount_point.c_str(), program.mount_point.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
      ::mount(nullptr, program.mount_point.c_str(), nullptr, MS_SHARED, nullptr) != 0)
    throw_errno("sharing " + program.mount_point + " with " + program.name);
  UniqueFd shared(::open(program.mount_point.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));  // that bind itself
  if (!shared) throw_errno(program.mount_point);
  UniqueFd log(::open(program.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log) throw_errno(program.log);
  std::vector<std::string> argv = {program.name};
  argv.insert(argv.end(), program.args.begin(), program.args.end());
  const int log_fd = log.get(), keep = program.keep_fd;
  DetachedChild server = DetachedChild::start(
      [&] {
        ::setsid();
        if (::unshare(CLONE_NEWNS) != 0) return 126;
        int null_fd = ::open("/dev/null", O_RDWR);
        ::dup2(null_fd, STDIN_FILENO);
        ::dup2(null_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        if (keep >= 0) ::fcntl(keep, F_SETFD, 0);
        keep_mount_capability();
        // Nothing of the caller's environment (a registry password) reaches it.
        std::string path_entry = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
        char* clean_environment[] = {path_entry.data(), nullptr};
        std::vector<char*> args = exec_array(argv);
        ::execve(executable.c_str(), args.data(), clean_environment);
        return 127;
      },
      {.parent_death_signal = SIGTERM, .name = program.name.c_str()});
  log.reset();
  const auto deadline = std::chrono::steady_clock::now() + kMountTimeout;
  for (auto pause = std::chrono::microseconds(200);; pause = std::min(pause * 2, std::chrono::microseconds(20000))) {
    struct stat now {};
    if (::stat(program.mount_point.c_str(), &now) == 0 && now.st_dev != before.st_dev) break;
    if (std::optional<ExitStatus> status = server.ended()) {
      throw Error(program.name + " could not mount " + program.mount_point + " (exit status " +
                  std::to_string(status->code()) + "): " + tail_of(program.log));
    }
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(program.name + " did not mount " + program.mount_point + " within 10 s: " + tail_of(program.log));
    std::this_thread::sleep_for(pause);
  }
  // Nothing mounted later below it is the program's business (and pivot_root refuses a
  // shared root).
  const std::string below = "/proc/self/fd/" + std::to_string(shared.get());
  if (::mount(nullptr, program.mount_point.c_str(), nullptr, MS_PRIVATE | MS_REC, nullptr) != 0 ||
      ::mount(nullptr, below.c_str(), nullptr, MS_PRIVATE, nullptr) != 0)
    throw_errno("making " + program.mount_point + " private");
}

}  // namespace capsa::runtime
