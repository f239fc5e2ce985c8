// `capsa instance start|run`: the container is launched as any other (launch.hpp) in a
// forked process of its own session, with a PID namespace whose init keeps it alive
// (instance_init.hpp); this process waits until it can be joined, then records it.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <vector>

#include "runtime/instance.hpp"
#include "runtime/instance_init.hpp"
#include "runtime/instance_job.hpp"
#include "runtime/instance_state.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/rfc3339.hpp"

namespace capsa::runtime {
namespace {

// The first line the instance writes to `fd` ("ready PID" or "error MESSAGE"), "" when
// it ended without one.
std::string first_line(int fd) {
  std::string text;
  char buf[512];
  while (text.find('\n') == std::string::npos) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text.substr(0, text.find('\n'));
}

UniqueFd open_log(const std::string& path) { return open_file(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600); }

// Closes every descriptor but 0-2 and `keep`: an instance outlives its caller, and must not
// hold the caller's pipes or sockets (a shell's command substitution, an ssh session, a
// batch system's channels would wait for it to end).
void close_inherited(std::initializer_list<int> keep) {
  std::vector<int> open;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (dirent* entry = ::readdir(dir)) {
      const int fd = std::atoi(entry->d_name);
      if (fd > STDERR_FILENO && fd != ::dirfd(dir)) open.push_back(fd);
    }
    ::closedir(dir);
  }
  for (int fd : open)
    if (std::find(keep.begin(), keep.end(), fd) == keep.end()) ::close(fd);
}

std::string real_path(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) throw_errno("image " + path);
  return resolved;
}

}  // namespace

InstanceRecord spawn_instance(ActionRequest r, const std::string& name, const InstanceStore& store,
                              const KeptOptions* kept) {
  const std::string image = real_path(r.image);  // a missing image fails here, before anything starts
  InstanceRecord record;
  record.name = name;
  record.image = image;
  record.uid = ::getuid();
  record.boot_id = current_boot_id();
  record.fakeroot = r.fakeroot;
  record.created = rfc3339_utc(std::time(nullptr));
  if (kept != nullptr) record.kept_key = kept->key;
  // A kept image says nothing to anyone (its containers' own output is theirs).
  if (kept == nullptr) {
    record.log_out = store.log_dir() + "/" + name + ".out";
    record.log_err = store.log_dir() + "/" + name + ".err";
  }
  UniqueFd out = kept ? open_file("/dev/null", O_WRONLY) : open_log(record.log_out);
  UniqueFd err = kept ? open_file("/dev/null", O_WRONLY) : open_log(record.log_err);
  UniqueFd record_dir = open_file(store.app_dir(), O_RDONLY | O_DIRECTORY);
  SlurmStep step = current_slurm_step();
  record.job_id = step.job_id;
  record.step_id = step.step_id;
  if (!step.job_id.empty() && !step.stepd && kept == nullptr)
    log::warning("instance " + name + " runs in Slurm job " + step.job_id +
                 " but no slurmstepd was found above this process: it will not be stopped when the job ends");

  // --sharens: the instance ends with the process whose containers share it.
  const bool ends_with_parent = r.end_with > 0 && !step.stepd;
  if (ends_with_parent) step.stepd = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, r.end_with, 0)));
  Pipe status = make_pipe();
  InstanceSupervision supervision{status.write_end.get(), step.stepd.get(), record_dir.get(), name};
  if (ends_with_parent) supervision.job_kind = "--sharens parent process";
  UniqueFd kept_lock;
  if (kept != nullptr) {
    // Its own open of the lock file: a flock belongs to the open file, and the caller's
    // holds the lock now.
    kept_lock = open_file(store.app_dir() + "/." + name + ".lock", O_RDWR | O_CLOEXEC);
    supervision.kept_lock_fd = kept_lock.get();
    supervision.linger_ms = kept->linger_ms;
  }
  r.image = image;
  r.namespaces.pid = true;
  r.namespaces.init = true;
  r.namespaces.instance = &supervision;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw_errno("starting instance " + name);
  if (child == 0) {
    // The instance's own session: no terminal, no job control of the caller's shell, and
    // no process group a batch system signals with the script's.
    ::setsid();
    // A kept image is started by a container about to exec its command, which must not
    // have it as a child (a command that waits for all its children would wait for it):
    // one more fork, and the instance is an orphan from birth.
    if (kept != nullptr) {
      const pid_t holder = ::fork();
      if (holder < 0) {
        report_instance_failure(supervision, std::string("fork: ") + std::strerror(errno));
        ::_exit(1);
      }
      if (holder > 0) ::_exit(0);
    }
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(out.get(), STDOUT_FILENO);
    ::dup2(err.get(), STDERR_FILENO);
    close_inherited({status.write_end.get(), step.stepd.get(), record_dir.get(), kept_lock.get()});
    out.release();  // closed just now
    err.release();
    status.read_end.release();
    try {
      launch(r);
    } catch (const std::exception& e) {
      log::error(e.what());
      report_instance_failure(supervision, e.what());
    }
    std::fflush(nullptr);
    ::_exit(1);
  }
  status.write_end.reset();
  const std::string line = first_line(status.read_end.get());
  if (kept != nullptr || !line.starts_with("ready ")) {
    int wait_status = 0;
    while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!line.starts_with("ready ")) {
    if (line.starts_with("error ")) throw Error("instance " + name + " did not start: " + line.substr(6));
    throw Error("instance " + name + " did not start" + (kept ? std::string() : " (see " + record.log_err + ")"));
  }
  // "ready INIT MONITOR", both in this PID namespace.
  char* rest = nullptr;
  record.pid = static_cast<pid_t>(std::strtol(line.c_str() + 6, &rest, 10));
  record.monitor = static_cast<pid_t>(std::strtol(rest, nullptr, 10));
  record.start_time = process_start_time(record.pid);
  record.monitor_start_time = process_start_time(record.monitor);
  const char* home = std::getenv("HOME");
  record.home = r.fakeroot ? "/root" : (!r.home.empty() ? r.home.substr(r.home.find(':') + 1) : (home ? home : "/"));
  store.save(record);
  return record;
}

void start_instance(ActionRequest r, const std::string& name, const std::string& pid_file) {
  check_instance_name(name);
  (void)real_path(r.image);  // a missing image fails here, before anything starts
  InstanceStore store = InstanceStore::for_caller();
  // One start of a name at a time: the check for a live instance and the new record are
  // made under this lock.
  UniqueFd name_lock = lock_instance_name(store, name, LOCK_EX);
  if (std::optional<InstanceRecord> running = store.find(name))
    throw Error("instance " + name + " already exists (PID " + std::to_string(running->pid) + ", image " +
                running->image + "): stop it with `capsa instance stop " + name + "` or choose another name");
  const InstanceRecord record = spawn_instance(std::move(r), name, store, nullptr);
  if (!pid_file.empty()) {
    // As Apptainer: the pid and a newline, the file replaced; a failure is only a warning.
    try {
      UniqueFd file = open_file(pid_file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
      const std::string text = std::to_string(record.pid) + "\n";
      write_all(file.get(), {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
    } catch (const Error& e) {
      log::warning(std::string("Failed to write pid file: ") + e.what());
    }
  }
  log::info("instance started successfully");
}

UniqueFd lock_instance_name(const InstanceStore& store, const std::string& name, int operation) {
  UniqueFd lock = open_file(store.app_dir() + "/." + name + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  while (::flock(lock.get(), operation) != 0)
    if (errno != EINTR) throw_errno("locking the instance name " + name);
  return lock;
}

}  // namespace capsa::runtime
