#include "runtime/temporary_image.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "runtime/sandbox_run.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/process.hpp"

namespace capsa::runtime {
namespace {

constexpr int kPassedOn[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT, SIGWINCH};

// How the temporary tree is made and removed: as root, owners kept; otherwise as the
// caller, who then owns every file (the ids a subuid unpack would give are not needed
// to run it, and the caller alone can remove what it owns).
RootMode unpack_mode() { return ::geteuid() == 0 ? RootMode::real_root : RootMode::fakeroot_emulated; }

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string make_temporary_directory(const std::string& tmpdir) {
  std::string pattern = temporary_parent(tmpdir) + "/capsa-unsquash-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr)
    throw_errno("creating a temporary directory for --unsquash in " + temporary_parent(tmpdir));
  return buffer.data();
}

// Removes `directory` when the object goes, also while an error unwinds.
class RemovedAtEnd {
 public:
  RemovedAtEnd(std::string directory, RootMode mode) : directory_(std::move(directory)), mode_(mode) {}
  ~RemovedAtEnd() {
    try {
      remove_sandbox(directory_, mode_);
    } catch (const std::exception& e) {
      log::warning(std::string("could not remove the temporary image: ") + e.what());
    }
  }
  RemovedAtEnd(const RemovedAtEnd&) = delete;
  RemovedAtEnd& operator=(const RemovedAtEnd&) = delete;

 private:
  std::string directory_;
  RootMode mode_;
};

// Why a FUSE mount of the image cannot work here (empty when it can): containers that
// mount their image with FUSE (unprivileged, -u/--userns, --fakeroot) need /dev/fuse.
// Some machines keep it root's (mode 0600); Apptainer then runs from a temporary
// sandbox, and so does capsa.
std::string fuse_unavailable(const ActionRequest& request) {
  if (::geteuid() == 0 && !request.userns && !request.fakeroot) return {};
  if (::access("/dev/fuse", R_OK | W_OK) == 0) return {};
  return std::string("/dev/fuse: ") + std::strerror(errno);
}

// Whether the image file is unpacked: --unsquash, or no FUSE to mount it with.
// Asked on every start: root costs no system call here, anyone else one access(2).
bool unpacks_image(const ActionRequest& request) {
  if (!request.unsquash && fuse_unavailable(request).empty()) return false;
  return !is_directory(request.image);
}

// Runs launch(request) in a child and returns how it ended, passing signals on.
ExitStatus run_in_child(const ActionRequest& request) {
  sigset_t signals, saved;
  sigemptyset(&signals);
  for (int sig : kPassedOn) sigaddset(&signals, sig);
  sigaddset(&signals, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &signals, &saved);
  Process child = Process::fork({.parent_death_signal = SIGKILL, .name = "the container"});
  if (child.in_child()) {
    ::sigprocmask(SIG_SETMASK, &saved, nullptr);
    try {
      launch(request);
    } catch (const StatusError& e) {
      Process::report_child_failure(e.what());
      Process::exit_child(e.status());
    } catch (const std::exception& e) {
      Process::report_child_failure(e.what());
      Process::exit_child(1);
    }
  }
  ExitStatus status = child.supervise(signals);
  ::sigprocmask(SIG_SETMASK, &saved, nullptr);
  return status;
}

}  // namespace

bool needs_temporary_image(const ActionRequest& request) {
  return !request.temporary_directory.empty() || unpacks_image(request);
}

std::string temporary_parent(const std::string& tmpdir) {
  if (!tmpdir.empty()) return tmpdir;
  for (const char* name : {"APPTAINER_TMPDIR", "SINGULARITY_TMPDIR", "TMPDIR"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  return "/tmp";
}

void launch_with_temporary_image(const ActionRequest& request) {
  ActionRequest inner = request;
  inner.temporary_directory.clear();
  inner.unsquash = false;
  ExitStatus status;
  {
    // A pulled image is the caller's own file; an unpacked tree may hold root's files.
    std::optional<RemovedAtEnd> pulled;
    if (!request.temporary_directory.empty()) pulled.emplace(request.temporary_directory, RootMode::fakeroot_emulated);
    std::optional<RemovedAtEnd> unpacked;
    if (unpacks_image(request)) {
      const std::string directory = make_temporary_directory(request.tmpdir);
      unpacked.emplace(directory, unpack_mode());
      inner.image = directory + "/rootfs";
      if (request.unsquash)
        log::verbose("unpacking " + request.image + " into the temporary sandbox " + inner.image + " (--unsquash)");
      else
        log::info("unpacking " + request.image + " into a temporary sandbox: no FUSE to mount it with (" +
                  fuse_unavailable(request) + ")");
      unpack_sandbox(request.image, inner.image, unpack_mode());
    }
    status = run_in_child(inner);
  }
  exit_like(status);
}

}  // namespace capsa::runtime
