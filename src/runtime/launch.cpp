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
#include <iostream>

#include "runtime/container_root.hpp"
#include "runtime/environment.hpp"
#include "runtime/gpu/nvccli.hpp"
#include "runtime/gpu/ldso_cache.hpp"
#include "runtime/gpu/nvidia.hpp"
#include "runtime/identity_files.hpp"
#include "runtime/image_mount.hpp"
#include "runtime/mount_plan.hpp"
#include "runtime/mpi_launcher.hpp"
#include "runtime/namespaces.hpp"
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

// With --nv, /.singularity.d/libs ends LD_LIBRARY_PATH (the image's 99-base.sh appends it;
// images without one get it here, also after an injected LD_LIBRARY_PATH). When it is the
// only entry, the container's own library directories (its `ldconfig -Nv` list) go first
// so that its libraries win over same-named host ones, as Apptainer 1.5+ does (§3.4).
constexpr const char* kGpuLibraryPath =
    "case \":${LD_LIBRARY_PATH:-}:\" in *:/.singularity.d/libs:*) ;; "
    "*) LD_LIBRARY_PATH=\"${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/.singularity.d/libs\" ;; esac\n"
    "if [ \"$LD_LIBRARY_PATH\" = /.singularity.d/libs ] && command -v ldconfig >/dev/null 2>&1; then\n"
    "  LD_LIBRARY_PATH=\"$(ldconfig -Nv 2>/dev/null | sed -n 's,^\\(/[^:]*\\):.*,\\1,p' | tr '\\n' :)$LD_LIBRARY_PATH\"\n"
    "fi\n"
    "export LD_LIBRARY_PATH\n";

std::string action_script(const std::string& action, const std::string& injection, bool gpu_libraries) {
  std::string script =
      "for capsa_env in /.singularity.d/env/*.sh; do [ -f \"$capsa_env\" ] && . \"$capsa_env\"; done\n"
      "unset capsa_env\n" + injection;
  if (gpu_libraries) script += kGpuLibraryPath;
  if (action == "exec") {
    script += "exec \"$@\"\n";
  } else if (action == "run") {
    script +=
        "if [ -x /.singularity.d/runscript ]; then exec /.singularity.d/runscript \"$@\"; fi\n"
        "if [ -x /singularity ]; then exec /singularity \"$@\"; fi\n"
        "echo 'no runscript in this container: running /bin/sh' >&2\n"
        "exec /bin/sh \"$@\"\n";
  } else if (action == "shell") {
    script +=
        "capsa_shell=\"${APPTAINER_SHELL:-${SINGULARITY_SHELL:-}}\"\n"
        "if [ -n \"$capsa_shell\" ] && [ -x \"$capsa_shell\" ]; then exec \"$capsa_shell\" \"$@\"; fi\n"
        "if [ -x /bin/bash ]; then SHELL=/bin/bash; export SHELL; exec /bin/bash --norc \"$@\"; fi\n"
        "SHELL=/bin/sh; export SHELL; exec /bin/sh \"$@\"\n";
  } else {  // test
    script +=
        "if [ -x /.singularity.d/test ]; then exec /.singularity.d/test \"$@\"; fi\n"
        "echo 'no test script in this container' >&2\n"
        "exit 0\n";
  }
  return script;
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
    argv_strings = {"/bin/sh", "-c", action_script(r.action, injection_script(env.injected), r.nv || r.nvccli), r.action};
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

// Under an MPI launcher, the image's MPI must speak the launcher's PMI: warn with a hint
// when its library cache shows it cannot (runtime/mpi_launcher.hpp), before anything hangs.
void warn_about_pmi_mismatch(const Launcher& launcher, const std::string& image_root) {
  if (!launcher.any()) return;
  std::vector<std::string> sonames;
  try {
    for (const auto& entry : gpu::parse_ldso_cache(read_image_file(image_root, "/etc/ld.so.cache")))
      sonames.push_back(entry.name);
  } catch (const FormatError&) {
    return;  // no or no readable cache: nothing to compare
  }
  if (auto warning = pmi_mismatch(launcher, image_mpi_from_sonames(sonames)))
    std::cerr << "WARNING: " << *warning << "\n";
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
  const bool privileged = ::geteuid() == 0;
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
    auto colon = r.home.find(':');
    mounts.home_source = r.home.substr(0, colon);
    mounts.home_destination = colon == std::string::npos ? mounts.home_source : r.home.substr(colon + 1);
  }
  mounts.cwd = current_directory();
  mounts.binds = r.binds;
  mounts.contain = r.contain;
  mounts.no_home = r.no_home;
  mounts.workdir = r.workdir;
  std::vector<MountStep> plan = plan_mounts(mounts);
  const EnvMap host_environment = current_environment();
  const Launcher launcher = detect_launcher(host_environment);
  for (MountStep& step : launcher_mounts(launcher, host_environment)) plan.push_back(std::move(step));
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
  env_request.host = host_environment;
  env_request.clean = r.cleanenv;
  env_request.env_args = r.env_args;
  env_request.env_files = r.env_files;
  env_request.home = mounts.home_destination;
  env_request.image_path = image;
  env_request.command = r.action;
  env_request.binds = format_bind_list(r.binds);
  if (!r.shell.empty()) env_request.host["APPTAINER_SHELL"] = r.shell;
  ComposedEnvironment env = compose_environment(env_request);
  if (!r.shell.empty()) env.process["APPTAINER_SHELL"] = env.process["SINGULARITY_SHELL"] = r.shell;
  if (r.nv || r.nvccli) pass_gpu_selection(env_request.host, env);
  for (const auto& warning : env.warnings) std::cerr << "WARNING: " << warning << "\n";
  if (auto warning = cleanenv_drops_launcher(launcher, r.cleanenv)) std::cerr << "WARNING: " << *warning << "\n";

  const std::string session_point = session_mount_point();
  enter_container_namespaces({::getuid(), ::getgid()});
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

  warn_about_pmi_mismatch(launcher, image_root);

  CallerAccount account = caller_account(mounts.home_destination);
  std::vector<std::pair<std::string, std::string>> files = {
      {"passwd", passwd_with_caller(read_image_file(image_root, "/etc/passwd"), account)},
      {"group", group_with_caller(read_image_file(image_root, "/etc/group"), account)}};
  build_root_and_enter({session_point, writable_tmpfs, privileged}, plan, files, before_enter);

  enter_working_directory(r.pwd.empty() ? mounts.cwd : r.pwd, !r.pwd.empty(), mounts.home_destination);
  exec_in_container(r, env);
}

}  // namespace capsa::runtime
