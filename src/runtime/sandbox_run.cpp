// run_in_sandbox: the mounts a build command sees, and the command itself (docs/fakeroot.md).
#include "runtime/sandbox_run.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <utility>

#include "runtime/container_root.hpp"
#include "runtime/gpu/nvccli.hpp"
#include "runtime/gpu/nvidia.hpp"
#include "runtime/gpu/rocm.hpp"
#include "runtime/host_source.hpp"
#include "runtime/mount_plan.hpp"
#include "runtime/namespaces.hpp"
#include "runtime/seccomp_fakeroot.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"
#include "util/log.hpp"
#include "util/open_in_root.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// apt switches to its _apt user before downloading and verifies that it did; with the
// identity calls faked it would still be root and stop. This file, named by APT_CONFIG,
// keeps it root (emulated mode only). It lives on the build's /tmp tmpfs, never in the image.
constexpr const char* kAptConfigPath = "/tmp/.capsa-fakeroot-apt.conf";
constexpr const char* kAptConfig = "APT::Sandbox::User \"root\";\n";

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
    if (bind.destination.empty() || bind.destination[0] != '/')
      throw Error("bind " + bind.source + ": the destination \"" + bind.destination + "\" must be an absolute path");
    MountStep step = host_bind(bind.source, bind.destination, false, true);
    step.read_only = bind.read_only;
    steps.push_back(step);
  }
  std::vector<gpu::DriverPlan> drivers;
  if (command.nv && !command.nvccli) drivers.push_back(gpu::plan_nvidia(gpu::host_nvidia_request(false)));
  if (command.rocm) drivers.push_back(gpu::plan_rocm(gpu::host_rocm_request(false)));
  for (const gpu::DriverPlan& driver : drivers) {
    steps.insert(steps.end(), driver.steps.begin(), driver.steps.end());
    for (const auto& warning : driver.warnings) log::warning(warning);
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
  std::string found = find_executable(name, path.empty() ? kDefaultPath : path, RelativeEntries::Search);
  return found.empty() ? name : found;  // execve reports ENOENT
}

// An empty directory made for the run and removed after it: the tmpfs of
// --writable-tmpfs is mounted on it in the child's mount namespace only.
class EmptyDirectory {
 public:
  explicit EmptyDirectory(const std::string& prefix) : path_(prefix + "XXXXXX") {
    if (::mkdtemp(path_.data()) == nullptr) throw_errno("--writable-tmpfs: a directory beside the sandbox");
  }
  ~EmptyDirectory() { ::rmdir(path_.c_str()); }
  EmptyDirectory(const EmptyDirectory&) = delete;
  EmptyDirectory& operator=(const EmptyDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// What the child needs beyond the command: where the tmpfs of --writable-tmpfs goes, and
// nvidia-container-cli's request.
struct SandboxSetup {
  std::string tmpfs_point;  // an empty directory beside the sandbox; "" = no overlay
  std::optional<gpu::NvccliRequest> nvccli;
};

// The sandbox under an overlay whose upper layer lives on a fresh tmpfs, mounted over the
// sandbox's own path (overlayfs resolves its lower directory before it covers it).
void mount_tmpfs_overlay(const std::string& rootfs, const std::string& point, RootMode mode) {
  if (::mount("tmpfs", point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
    throw_errno("--writable-tmpfs: mounting a tmpfs on " + point);
  for (const char* dir : {"/upper", "/work"})
    if (::mkdir((point + dir).c_str(), 0755) != 0) throw_errno("--writable-tmpfs: " + point + dir);
  std::string options = "lowerdir=" + rootfs + ",upperdir=" + point + "/upper,workdir=" + point + "/work";
  // In a user namespace overlayfs keeps its own metadata in user.* xattrs.
  if (mode != RootMode::real_root) options += ",userxattr";
  if (::mount("overlay", rootfs.c_str(), "overlay", 0, options.c_str()) != 0)
    throw_errno("--writable-tmpfs: the kernel refused an overlay over the sandbox " + rootfs +
                " (overlayfs in a user namespace needs Linux 5.11)");
}

// A bind mount made read-only keeps the flags the kernel locked on it in a user namespace.
void remount_read_only(const std::string& rootfs) {
  struct statvfs current {};
  if (::statvfs(rootfs.c_str(), &current) != 0) throw_errno("sandbox " + rootfs);
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
  for (auto [st, ms] : {std::pair<unsigned long, unsigned long>{ST_NOSUID, MS_NOSUID},
                        {ST_NODEV, MS_NODEV},
                        {ST_NOEXEC, MS_NOEXEC},
                        {ST_NOATIME, MS_NOATIME},
                        {ST_NODIRATIME, MS_NODIRATIME},
                        {ST_RELATIME, MS_RELATIME}})
    if ((current.f_flag & st) != 0) flags |= ms;
  if (::mount(nullptr, rootfs.c_str(), nullptr, flags, nullptr) != 0)
    throw_errno("making the sandbox " + rootfs + " read-only");
}

// In the child: mounts, pivot_root, seccomp (emulated), exec. Never returns.
[[noreturn]] void exec_in_sandbox(const SandboxCommand& command, RootMode mode, const std::string& rootfs,
                                  const std::vector<MountStep>& steps, const SandboxSetup& setup) {
  if (::unshare(CLONE_NEWNS) != 0) throw_errno("creating a mount namespace for the sandbox");
  make_mounts_private();
  // pivot_root needs the new root to be a mount point.
  if (!setup.tmpfs_point.empty())
    mount_tmpfs_overlay(rootfs, setup.tmpfs_point, mode);
  else if (::mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    throw_errno("binding the sandbox " + rootfs);
  {
    UniqueFd root_fd = open_file(rootfs, O_PATH | O_DIRECTORY);
    // The sources were examined by the parent (run_in_sandbox), whose descriptors belong
    // to the mount namespace left behind: they are bound by path.
    for (const MountStep& step : steps)
      apply_step(root_fd.get(), "", step,
                 step.kind == MountStep::Kind::Tmpfs ? HostSource() : HostSource::examined_elsewhere(step.directory));
  }
  if (setup.nvccli) gpu::configure_root_with_nvccli(*setup.nvccli, rootfs);
  if (command.read_only_root && setup.tmpfs_point.empty()) remount_read_only(rootfs);
  enter_root(rootfs);
  std::vector<std::string> env = command.env;
  const bool emulated = mode == RootMode::fakeroot_emulated && !command.no_root_emulation;
  if (emulated) {
    // Written after pivot_root: the path resolves inside the sandbox, on the /tmp tmpfs.
    std::ofstream apt(kAptConfigPath);
    apt << kAptConfig;
    apt.close();
    if (apt.good() && value_of(env, "APT_CONFIG").empty()) env.push_back(std::string("APT_CONFIG=") + kAptConfigPath);
  }
  if (::chdir(command.cwd.c_str()) != 0) throw_errno("working directory " + command.cwd + " in the sandbox");
  if (emulated) install_fakeroot_seccomp_filter();

  std::string program = find_program(command.argv[0], env);
  std::vector<char*> argv = exec_array(command.argv), envp = exec_array(env);
  ::execve(program.c_str(), argv.data(), envp.data());
  throw_errno("running " + command.argv[0] + " in the sandbox");
}

}  // namespace

int run_in_sandbox(const SandboxCommand& command) {
  if (command.argv.empty()) throw Error("run_in_sandbox: no command");
  const RootMode mode = resolve_root_mode(command.mode);
  const std::string rootfs = absolute_directory(command.rootfs);
  std::vector<MountStep> planned = sandbox_plan(command);
  std::vector<MountStep> steps;
  MountPoints points(rootfs);
  for (MountStep& step : planned) {
    if (step.kind != MountStep::Kind::Tmpfs) {
      const HostSource source = HostSource::examine(step.source);  // once: the child trusts what it found
      if (!source.exists()) {
        if (step.required) throw Error("bind source " + step.source + " does not exist on the host");
        continue;
      }
      step.directory = source.directory();
    }
    if (points.prepare(step)) steps.push_back(step);
  }
  SandboxSetup setup;
  if (command.nvccli) {
    const char* path = std::getenv("PATH");
    setup.nvccli = gpu::nvccli_request(gpu::require_nvidia_container_cli(path ? path : "/usr/bin:/bin"), false,
                                       mode != RootMode::real_root);
  }
  // nvidia-container-cli writes into the root: a read-only one gets the tmpfs overlay, as
  // an action's does.
  std::optional<EmptyDirectory> tmpfs_point;
  if (command.writable_tmpfs || (command.nvccli && command.read_only_root)) {
    if (rootfs.find_first_of(",:") != std::string::npos)
      throw Error("--writable-tmpfs: the sandbox path " + rootfs + " has a ',' or ':', which overlayfs cannot take");
    tmpfs_point.emplace(split_parent(rootfs).first + "/.capsa-tmpfs-");
    setup.tmpfs_point = tmpfs_point->path();
  }
  return run_in_user_namespace(mode, [&]() -> int { exec_in_sandbox(command, mode, rootfs, steps, setup); });
}

}  // namespace capsa::runtime
