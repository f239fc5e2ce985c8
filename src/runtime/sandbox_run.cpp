#include "runtime/sandbox_run.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/container_root.hpp"
#include "runtime/gpu/nvidia.hpp"
#include "runtime/mount_plan.hpp"
#include "runtime/namespaces.hpp"
#include "runtime/seccomp_fakeroot.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "squashfs/unpack.hpp"
#include "util/interrupt.hpp"

namespace capsa::runtime {
namespace {

constexpr const char* kSubuidFile = "/etc/subuid";
constexpr const char* kSubgidFile = "/etc/subgid";
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// apt switches to its _apt user before downloading and verifies that it did; with the
// identity calls faked it would still be root and stop. This file, named by APT_CONFIG,
// keeps it root (emulated mode only). It lives on the build's /tmp tmpfs, never in the image.
constexpr const char* kAptConfigPath = "/tmp/.capsa-fakeroot-apt.conf";
constexpr const char* kAptConfig = "APT::Sandbox::User \"root\";\n";

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

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

struct Pipe {
  UniqueFd read, write;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe");
    read.reset(fds[0]);
    write.reset(fds[1]);
  }
};

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// Runs newuidmap/newgidmap for `pid` and waits; the helper's own message goes to stderr.
void run_map_helper(const std::string& helper, pid_t pid, const std::vector<std::string>& mapping) {
  std::vector<std::string> args = {helper, std::to_string(pid)};
  args.insert(args.end(), mapping.begin(), mapping.end());
  pid_t child = ::fork();
  if (child < 0) throw_errno("fork");
  if (child == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
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

// --- the sandbox's mounts ----------------------------------------------------------

std::string absolute_directory(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) throw_errno("sandbox " + path);
  struct stat st {};
  if (::stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) throw Error("sandbox " + path + " is not a directory");
  return resolved;
}

MountStep host_bind(const std::string& source, const std::string& target, bool recursive, bool required) {
  MountStep step;
  step.kind = recursive ? MountStep::Kind::RecursiveBind : MountStep::Kind::Bind;
  step.source = source;
  step.target = target;
  step.required = required;
  struct stat st {};
  step.directory = ::stat(source.c_str(), &st) != 0 || S_ISDIR(st.st_mode);
  return step;
}

// What a build's commands see (Apptainer's build: the host's network and name service,
// the kernel's file systems, a scratch /tmp; no home, no passwd rewriting: root is root).
std::vector<MountStep> sandbox_plan(const SandboxCommand& command) {
  std::vector<MountStep> steps;
  for (const char* dir : {"/proc", "/sys", "/dev"}) steps.push_back(host_bind(dir, dir, true, true));
  MountStep tmp;
  tmp.kind = MountStep::Kind::Tmpfs;
  tmp.target = "/tmp";
  steps.push_back(tmp);
  for (const char* file : {"/etc/resolv.conf", "/etc/hosts"}) steps.push_back(host_bind(file, file, false, false));
  for (const BindSpec& bind : command.binds) {
    if (bind.image_source || bind.sif_id)
      throw Error("bind " + bind.source + ": image-src/id binds are not supported while building");
    MountStep step = host_bind(bind.source, bind.destination, false, true);
    step.read_only = bind.read_only;
    steps.push_back(step);
  }
  if (command.nv) {
    gpu::NvidiaPlan nvidia = gpu::plan_nvidia(gpu::host_nvidia_request(false));
    steps.insert(steps.end(), nvidia.steps.begin(), nvidia.steps.end());
    for (const auto& warning : nvidia.warnings) std::cerr << "WARNING: " << warning << "\n";
  }
  return steps;
}

std::pair<std::string, std::string> split_parent(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string parent = path.substr(0, slash);
  return {parent.empty() ? "/" : parent, path.substr(slash + 1)};
}

// Mount targets the sandbox lacks, made before the run and removed after it (only while
// still empty), so that the image gains nothing from being built in.
class MountPoints {
 public:
  explicit MountPoints(const std::string& rootfs) : root_(open_file(rootfs, O_PATH | O_DIRECTORY)) {}
  ~MountPoints() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      auto [parent, name] = split_parent(it->first);
      UniqueFd dir(open_in_root(root_.get(), parent, O_RDONLY | O_DIRECTORY));
      if (!dir) continue;
      struct stat st {};
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (it->second && S_ISDIR(st.st_mode)) ::unlinkat(dir.get(), name.c_str(), AT_REMOVEDIR);  // fails unless empty
      if (!it->second && S_ISREG(st.st_mode) && st.st_size == 0) ::unlinkat(dir.get(), name.c_str(), 0);
    }
  }
  MountPoints(const MountPoints&) = delete;
  MountPoints& operator=(const MountPoints&) = delete;

  // Makes `step.target` exist (parents as directories). False when it cannot be made
  // (a dangling symlink, a file in the way) and the step is optional.
  bool prepare(const MountStep& step) {
    if (step.kind == MountStep::Kind::Tmpfs || step.kind == MountStep::Kind::Bind ||
        step.kind == MountStep::Kind::RecursiveBind) {
      std::string current;
      std::size_t start = 1;
      const std::string& path = step.target;
      while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        if (end == start) {
          start = end + 1;
          continue;
        }
        current += "/" + path.substr(start, end - start);
        bool last = end == path.size();
        if (!ensure(current, last ? step.directory : true)) {
          if (step.required) throw_errno("mount point " + step.target + " in the sandbox");
          return false;
        }
        start = end + 1;
      }
    }
    return true;
  }

 private:
  bool ensure(const std::string& path, bool directory) {
    UniqueFd existing(open_in_root(root_.get(), path, O_PATH));
    if (existing) return true;
    auto [parent, name] = split_parent(path);
    UniqueFd dir(open_in_root(root_.get(), parent, O_RDONLY | O_DIRECTORY));
    if (!dir) return false;
    if (directory) {
      if (::mkdirat(dir.get(), name.c_str(), 0755) != 0) return false;
    } else {
      int fd = ::openat(dir.get(), name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) return false;
      ::close(fd);
    }
    // Recorded as resolved in the sandbox, so that removal finds the same entry.
    created_.emplace_back(path, directory);
    return true;
  }

  UniqueFd root_;
  std::vector<std::pair<std::string, bool>> created_;  // path in the sandbox, is a directory
};

std::string value_of(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& kv : env)
    if (kv.compare(0, name.size() + 1, name + "=") == 0) return kv.substr(name.size() + 1);
  return "";
}

// argv[0] as execvp would find it, but with the command's PATH (execvpe searches the
// caller's own PATH, not the one in envp).
std::string find_program(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = value_of(env, "PATH");
  if (path.empty()) path = kDefaultPath;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return name;  // execve reports ENOENT
}

// In the child: mounts, pivot_root, seccomp (emulated), exec. Never returns.
[[noreturn]] void exec_in_sandbox(const SandboxCommand& command, RootMode mode, const std::string& rootfs,
                                  const std::vector<MountStep>& steps) {
  if (::unshare(CLONE_NEWNS) != 0) throw_errno("creating a mount namespace for the sandbox");
  make_mounts_private();
  // pivot_root needs the new root to be a mount point.
  if (::mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    throw_errno("binding the sandbox " + rootfs);
  {
    UniqueFd root_fd = open_file(rootfs, O_PATH | O_DIRECTORY);
    for (const MountStep& step : steps) apply_step(root_fd.get(), "", step);
  }
  enter_root(rootfs);
  std::vector<std::string> env = command.env;
  if (mode == RootMode::fakeroot_emulated) {
    // Written after pivot_root: the path resolves inside the sandbox, on the /tmp tmpfs.
    std::ofstream apt(kAptConfigPath);
    apt << kAptConfig;
    apt.close();
    if (apt.good() && value_of(env, "APT_CONFIG").empty()) env.push_back(std::string("APT_CONFIG=") + kAptConfigPath);
  }
  if (::chdir(command.cwd.c_str()) != 0) throw_errno("working directory " + command.cwd + " in the sandbox");
  if (mode == RootMode::fakeroot_emulated) install_fakeroot_seccomp_filter();

  std::vector<std::string> argv_strings = command.argv;
  std::string program = find_program(argv_strings[0], env);
  std::vector<char*> argv, envp;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  ::execve(program.c_str(), argv.data(), envp.data());
  throw_errno("running " + argv_strings[0] + " in the sandbox");
}

// Empties the open directory `dir` (`path` names it in errors), depth first, without
// following symlinks; a directory that refuses (EACCES: mode 0555 or 0000) gets u+rwx.
void remove_contents(int dir, const std::string& path) {
  int copy = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) throw_errno(path);
  DIR* listing = ::fdopendir(copy);
  if (listing == nullptr) {
    ::close(copy);
    throw_errno(path);
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(listing)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(listing);
  for (const std::string& name : names) {
    if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    if (errno != EISDIR && errno != EPERM) throw_errno("removing " + path + "/" + name);
    UniqueFd child(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child && errno == EACCES) {
      ::fchmodat(dir, name.c_str(), 0700, 0);
      child.reset(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    if (!child) throw_errno("removing " + path + "/" + name);
    ::fchmod(child.get(), 0700);  // entries of a 0555 directory cannot be unlinked
    remove_contents(child.get(), path + "/" + name);
    if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0) throw_errno("removing " + path + "/" + name);
  }
}

void remove_tree(const std::string& path) {
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir && errno == ENOENT) return;
  if (!dir && errno == ENOTDIR) {
    if (::unlink(path.c_str()) != 0) throw_errno("removing " + path);
    return;
  }
  if (!dir) throw_errno("removing " + path);
  ::fchmod(dir.get(), 0700);
  remove_contents(dir.get(), path);
  dir.reset();
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) throw_errno("removing " + path);
}

}  // namespace

void unpack_sandbox(const std::string& image_path, const std::string& directory, RootMode mode) {
  RootMode resolved = resolve_root_mode(mode);
  if (resolved != RootMode::fakeroot_subid) {
    squashfs::unpack_to_directory(image_path, directory);
    return;
  }
  run_in_user_namespace(resolved, [&] {
    squashfs::unpack_to_directory(image_path, directory);
    return 0;
  });
}

std::uint64_t pack_sandbox(const std::string& directory, int fd, std::uint64_t offset, RootMode mode,
                           squashfs::PackOptions options) {
  RootMode resolved = resolve_root_mode(mode);
  if (resolved == RootMode::fakeroot_emulated) {
    options.owner_as_root = ::getuid();
    options.group_as_root = ::getgid();
  }
  if (resolved != RootMode::fakeroot_subid) return squashfs::pack_directory(directory, fd, offset, options);
  // The size comes back through a pipe: the child's exit status is too small for it.
  Pipe result;
  run_in_user_namespace(resolved, [&] {
    result.read.reset();
    std::uint64_t bytes = squashfs::pack_directory(directory, fd, offset, options);
    write_all(result.write.get(), {reinterpret_cast<const std::uint8_t*>(&bytes), sizeof bytes});
    return 0;
  });
  result.write.reset();
  std::uint64_t bytes = 0;
  std::string raw = read_all(result.read.get());
  if (raw.size() != sizeof bytes) throw Error("packing " + directory + ": no size came back from the fakeroot namespace");
  std::memcpy(&bytes, raw.data(), sizeof bytes);
  return bytes;
}

void remove_sandbox(const std::string& path, RootMode mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return;
  RootMode resolved = mode == RootMode::real_root ? mode : resolve_root_mode(mode);
  if (resolved != RootMode::fakeroot_subid) {
    remove_tree(path);
    return;
  }
  // The top directory's parent belongs to the caller outside; its contents may not.
  run_in_user_namespace(resolved, [&] {
    remove_tree(path);
    return 0;
  });
}

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
  Pipe ready, mapped, errors;
  std::cout.flush();
  std::cerr.flush();
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    // The child: its result travels back as an exit status, its failure as a message.
    ready.read.reset();
    mapped.write.reset();
    errors.read.reset();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(255);
    // Ctrl-C must end the child's work at once: capsa's own handlers (util/interrupt)
    // only set a flag that code in the child does not poll.
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal_number, SIG_DFL);
    int status = 255;
    try {
      enter_user_namespace(mode, uid, gid, ready.write.get(), mapped.read.get());
      status = body();
    } catch (const std::exception& e) {
      std::string message = e.what();
      write_all(errors.write.get(), {reinterpret_cast<const std::uint8_t*>(message.data()), message.size()});
    } catch (...) {
      std::string message = "unknown error in the fakeroot child";
      write_all(errors.write.get(), {reinterpret_cast<const std::uint8_t*>(message.data()), message.size()});
    }
    std::cout.flush();
    std::cerr.flush();
    ::_exit(status);
  }
  ready.write.reset();
  mapped.read.reset();
  errors.write.reset();
  auto reap = [pid] {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) throw_errno("waiting for the sandbox process");
    }
    return status;
  };
  if (mode == RootMode::fakeroot_subid && read_byte(ready.read.get())) {
    try {
      run_map_helper(newuidmap, pid, {"0", std::to_string(uid), "1", "1", std::to_string(subuid->start),
                                      std::to_string(subuid->count)});
      run_map_helper(newgidmap, pid, {"0", std::to_string(gid), "1", "1", std::to_string(subgid->start),
                                      std::to_string(subgid->count)});
    } catch (...) {
      ::kill(pid, SIGKILL);
      reap();
      throw;
    }
    write_byte(mapped.write.get());
  }
  mapped.write.reset();
  std::string message = read_all(errors.read.get());  // EOF at exit, or at exec (close-on-exec)
  int status = reap();
  // The child died of the same Ctrl-C: unwind the caller (temporary sandboxes removed).
  throw_if_interrupted();
  if (!message.empty()) throw Error(message);
  return exit_status(status);
}

int run_in_sandbox(const SandboxCommand& command) {
  if (command.argv.empty()) throw Error("run_in_sandbox: no command");
  const RootMode mode = resolve_root_mode(command.mode);
  const std::string rootfs = absolute_directory(command.rootfs);
  std::vector<MountStep> planned = sandbox_plan(command);
  std::vector<MountStep> steps;
  MountPoints points(rootfs);
  for (const MountStep& step : planned) {
    if (step.kind != MountStep::Kind::Tmpfs) {
      struct stat st {};
      if (::stat(step.source.c_str(), &st) != 0) {
        if (step.required) throw Error("bind source " + step.source + " does not exist on the host");
        continue;
      }
    }
    if (points.prepare(step)) steps.push_back(step);
  }
  return run_in_user_namespace(mode, [&]() -> int { exec_in_sandbox(command, mode, rootfs, steps); });
}

}  // namespace capsa::runtime
