#include "runtime/launch.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "runtime/action_script.hpp"
#include "runtime/container_root.hpp"
#include "runtime/environment.hpp"
#include "runtime/gpu/nvccli.hpp"
#include "runtime/gpu/nvidia.hpp"
#include "runtime/identity_files.hpp"
#include "runtime/image_mount.hpp"
#include "runtime/mount_plan.hpp"
#include "runtime/namespaces.hpp"
#include "runtime/pid_namespace.hpp"
#include "sif/image.hpp"
#include "squashfs/reader.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

std::string absolute(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) throw_errno(path);
  return resolved;
}

std::string caller_home() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  if (passwd* pw = ::getpwuid(::getuid())) return pw->pw_dir;
  return "/";
}

std::string current_directory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string("/");
}

// Where this container's session tmpfs is mounted: a directory that only has to exist.
// Each container mounts over it in its own mount namespace, so one serves them all.
std::string session_mount_point() {
  if (const char* dir = std::getenv("CAPSA_SESSION_DIR"); dir && *dir) return dir;
  std::string fallback = "/tmp/.capsa-session-" + std::to_string(::getuid());
  if (::mkdir(fallback.c_str(), 0700) != 0 && errno != EEXIST) throw_errno(fallback);
  struct stat st {};
  if (::lstat(fallback.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
    throw Error(fallback + " is not a directory owned by you; remove it or set CAPSA_SESSION_DIR");
  return fallback;
}

// The image's squashfs root: a SIF's primary partition, checked before anything is mounted.
SquashfsLocation locate_squashfs(const std::string& path) {
  sif::Image image = sif::Image::open(path);
  const sif::Descriptor* primary = image.primary_partition();
  if (primary == nullptr) throw FormatError(path + ": no primary system partition to run");
  if (primary->partition().fs_type != sif::FsType::Squashfs ||
      !squashfs::has_squashfs_magic(image.fd(), static_cast<std::uint64_t>(primary->offset)))
    throw FormatError(path + ": primary partition (object " + std::to_string(primary->id) + ") is " +
                      std::string(sif::name_of(primary->partition().fs_type)) +
                      ", not squashfs: capsa runs squashfs images");
  return {path, static_cast<std::uint64_t>(primary->offset), static_cast<std::uint64_t>(primary->size)};
}

std::string host_path() {
  const char* path = std::getenv("PATH");
  return path ? path : "/usr/bin:/bin";
}

// GPU selection goes through even with --cleanenv (Apptainer: NVIDIA_* come from the host).
void pass_gpu_selection(const EnvMap& host, ComposedEnvironment& env) {
  for (const char* name : {"NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"})
    if (auto it = host.find(name); it != host.end() && !env.process.count(name)) env.process[name] = it->second;
}

[[noreturn]] void exec_in_container(const ActionRequest& r, const ComposedEnvironment& env) {
  EnvMap process = env.process;
  // No shell, so no script appends the driver libraries: they are the whole path.
  if ((r.nv || r.nvccli) && ::access("/bin/sh", X_OK) != 0 && !process.count("LD_LIBRARY_PATH"))
    process["LD_LIBRARY_PATH"] = gpu::kLibsDir;
  std::vector<std::string> envp_strings = to_envp(process);
  std::vector<char*> envp;
  for (auto& s : envp_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::vector<std::string> argv_strings;
  if (::access("/bin/sh", X_OK) == 0) {
    argv_strings = {"/bin/sh", "-c", action_script({r.action, &process, &env.injected, r.nv || r.nvccli}), r.action};
    argv_strings.insert(argv_strings.end(), r.args.begin(), r.args.end());
  } else if (r.action == "exec" && !r.args.empty()) {
    // No shell in the image (distroless): no environment scripts, the command itself.
    argv_strings = r.args;
  } else {
    throw Error("the image has no /bin/sh to run its " + r.action + " script; use `capsa exec IMAGE COMMAND`");
  }
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  // Nothing the container runs may gain privileges (setuid binaries in the image included).
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  ::execvpe(argv[0], argv.data(), envp.data());
  throw_errno("running " + argv_strings[0] + " in the container");
}

// --workdir with --contain: Apptainer makes <workdir>/tmp and <workdir>/var_tmp (sticky,
// world-writable, like the directories they stand for) and <workdir>/home when they are
// missing. Without --contain the host's /tmp and /var/tmp are used and it has no effect.
std::string prepare_workdir(const std::string& workdir, bool contain, bool home) {
  std::string dir = absolute(workdir);
  if (!contain) return dir;
  auto make = [&](const std::string& name, mode_t mode) {
    std::string path = dir + "/" + name;
    if (::mkdir(path.c_str(), mode) == 0) {
      if (::chmod(path.c_str(), mode) != 0) throw_errno("--workdir: " + path);
    } else if (errno != EEXIST) {
      throw_errno("--workdir: creating " + path);
    }
  };
  make("tmp", 01777);
  make("var_tmp", 01777);
  if (home) make("home", 0700);
  return dir;
}

void enter_working_directory(const std::string& wanted, bool explicit_pwd, const std::string& home) {
  if (::chdir(wanted.c_str()) == 0) return;
  if (explicit_pwd) throw_errno("--pwd " + wanted);
  if (::chdir(home.c_str()) == 0 || ::chdir("/") == 0) {
    std::cerr << "WARNING: " << wanted << " does not exist in the container; starting in " << current_directory() << "\n";
  }
}

}  // namespace

void launch(const ActionRequest& r) {
  // Root with -u/--userns runs as everyone else does: in a user namespace, image on FUSE.
  const bool privileged = ::geteuid() == 0 && !r.userns;
  const std::string image = absolute(r.image);
  struct stat st {};
  if (::stat(image.c_str(), &st) != 0) throw_errno(r.image);
  const bool sandbox = S_ISDIR(st.st_mode);
  SquashfsLocation squashfs;
  if (!sandbox) squashfs = locate_squashfs(image);

  MountRequest mounts;
  mounts.home_source = caller_home();
  mounts.home_destination = mounts.home_source;
  if (!r.home.empty()) {
    mounts.custom_home = true;
    auto colon = r.home.find(':');
    mounts.home_source = r.home.substr(0, colon);
    mounts.home_destination = colon == std::string::npos ? mounts.home_source : r.home.substr(colon + 1);
  }
  mounts.cwd = current_directory();
  mounts.binds = r.binds;
  mounts.contain = r.contain;
  mounts.no_home = r.no_home;
  mounts.workdir = r.workdir.empty() ? "" : prepare_workdir(r.workdir, r.contain, !r.no_home && !mounts.custom_home);
  std::vector<MountStep> plan = plan_mounts(mounts);
  bool writable_tmpfs = r.writable_tmpfs;
  std::function<void(const std::string&)> before_enter;
  if (r.nvccli) {
    // nvidia-container-cli writes the driver into the root: it needs a writable one.
    gpu::NvccliRequest nvccli = gpu::nvccli_request(gpu::require_nvidia_container_cli(host_path()), r.contain, !privileged);
    writable_tmpfs = true;
    before_enter = [nvccli](const std::string& root) { gpu::configure_root_with_nvccli(nvccli, root); };
  } else if (r.nv) {
    gpu::NvidiaPlan nvidia = gpu::plan_nvidia(gpu::host_nvidia_request(r.contain));
    plan.insert(plan.end(), nvidia.steps.begin(), nvidia.steps.end());
    for (const auto& warning : nvidia.warnings) std::cerr << "WARNING: " << warning << "\n";
  }
  if (r.debug) std::cerr << "capsa: mount plan\n" << describe(plan);

  EnvRequest env_request;
  env_request.host = current_environment();
  env_request.clean = r.cleanenv;
  env_request.env_args = r.env_args;
  env_request.env_files = r.env_files;
  env_request.home = mounts.home_destination;
  // As Apptainer (filepath.Abs): absolute but not resolved, so a symlink keeps its name.
  env_request.image_path = std::filesystem::absolute(r.image).lexically_normal().string();
  env_request.command = r.action;
  env_request.binds = format_bind_list(r.binds);
  if (!r.shell.empty()) env_request.host["APPTAINER_SHELL"] = r.shell;
  ComposedEnvironment env = compose_environment(env_request);
  if (!r.shell.empty()) env.process["APPTAINER_SHELL"] = env.process["SINGULARITY_SHELL"] = r.shell;
  if (r.nv || r.nvccli) pass_gpu_selection(env_request.host, env);
  for (const auto& warning : env.warnings) std::cerr << "WARNING: " << warning << "\n";

  const std::string session_point = session_mount_point();
  enter_container_namespaces({::getuid(), ::getgid(), r.userns});
  make_mounts_private();
  if (::mount("capsa-session", session_point.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m") != 0)
    throw_errno("mounting the session tmpfs on " + session_point);
  const std::string image_root = session_point + "/image";
  if (::mkdir(image_root.c_str(), 0755) != 0) throw_errno(image_root);
  if (sandbox) {
    if (::mount(image.c_str(), image_root.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      throw_errno("binding the sandbox " + image);
  } else {
    mount_squashfs(squashfs, image_root, privileged);
  }

  CallerAccount account = caller_account(mounts.home_destination);
  std::vector<std::pair<std::string, std::string>> files = {
      {"passwd", passwd_with_caller(read_image_file(image_root, "/etc/passwd"), account)},
      {"group", group_with_caller(read_image_file(image_root, "/etc/group"), account)}};
  build_root_and_enter({session_point, writable_tmpfs, privileged}, plan, files, before_enter);
  if (r.containall) enter_private_pid_and_ipc_namespaces();

  enter_working_directory(r.pwd.empty() ? mounts.cwd : r.pwd, !r.pwd.empty(), mounts.home_destination);
  exec_in_container(r, env);
}

}  // namespace capsa::runtime
