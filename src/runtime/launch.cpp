#include "runtime/launch.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include "image/directory_files.hpp"
#include "image/scif_apps.hpp"
#include "image/squashfs_files.hpp"
#include "runtime/action_in_process.hpp"
#include "runtime/action_script.hpp"
#include "runtime/action_without_shell.hpp"
#include "runtime/cgroups/container_cgroup.hpp"
#include "runtime/command_prefetch.hpp"
#include "runtime/container_exec.hpp"
#include "runtime/container_root.hpp"
#include "runtime/encrypted_image.hpp"
#include "runtime/env_script.hpp"
#include "runtime/environment.hpp"
#include "runtime/fuse_mounts.hpp"
#include "runtime/gpu/cdi_apply.hpp"
#include "runtime/gpu/ldso_cache.hpp"
#include "runtime/gpu/nvccli.hpp"
#include "runtime/gpu/nvidia.hpp"
#include "runtime/gpu/rocm.hpp"
#include "runtime/identity_files.hpp"
#include "runtime/image_lease.hpp"
#include "runtime/image_mount.hpp"
#include "runtime/instance_init.hpp"
#include "runtime/kept_image.hpp"
#include "runtime/mount_plan.hpp"
#include "runtime/mpi_launcher.hpp"
#include "runtime/namespaces.hpp"
#include "runtime/network/container_network.hpp"
#include "runtime/overlay_lock.hpp"
#include "runtime/overlay_mount.hpp"
#include "runtime/private_namespaces.hpp"
#include "runtime/seccomp_profile.hpp"
#include "runtime/session_mount_point.hpp"
#include "runtime/temporary_image.hpp"
#include "runtime/underlay_root.hpp"
#include "sif/image.hpp"
#include "squashfs/reader.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/file_identity.hpp"
#include "util/log.hpp"
#include "util/run_program.hpp"
#include "util/start_phases.hpp"

namespace capsa::runtime {
namespace {

std::string absolute(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) throw_errno(path);
  return resolved;
}

// Binds the sandbox directory `image` at `target` if it is still the directory `judged`
// describes (the one the checks saw), through a descriptor opened in this mount namespace
// (one opened before the unshare names the host's mounts, which cannot be bound here): a
// path swapped for another directory after the checks is refused, not bound.
void bind_sandbox(const std::string& image, const struct stat& judged, const std::string& target) {
  const UniqueFd dir(::open(image.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct stat now {};
  if (!dir || ::fstat(dir.get(), &now) != 0) throw_errno("the sandbox " + image);
  if (now.st_dev != judged.st_dev || now.st_ino != judged.st_ino)
    throw Error(image + " changed after it was checked: nothing was run (run the command again)");
  const std::string opened = "/proc/self/fd/" + std::to_string(dir.get());
  if (::mount(opened.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
    throw_errno("binding the sandbox " + image);
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

// A SIF's primary partition, checked before anything is mounted, with a reader of its
// files: what capsa needs from the image before it runs (/etc/passwd, /etc/group) is read
// here, without round trips through the mount (a FUSE server, unprivileged).
struct OpenedSquashfs {
  sif::Image image;
  SquashfsLocation location;
  image::SquashfsFiles files;  // over image.fd(), or over decrypted
  UniqueFd decrypted;          // an encrypted image's plain squashfs (encrypted_image.hpp)
};

// The CryptoMessage linked to the partition: the volume secret wrapped for an RSA key
// (encryption/wrapped_key.hpp), as Apptainer finds it (cryptkey.getEncryptionKeyFromImage).
std::string wrapped_secret_of(const sif::Image& image, const sif::Descriptor& partition) {
  for (const sif::Descriptor& d : image.objects()) {
    if (d.data_type != sif::DataType::CryptoMessage || d.linked_to_group() || d.linked_id() != partition.id) continue;
    const sif::CryptoMessageInfo info = d.crypto_message();
    if (info.format == sif::FormatType::Pem && info.message == sif::MessageType::RsaOaep) return image.read_object(d);
  }
  throw Error(image.path() + ": encrypted with a passphrase, not for an RSA key (give --passphrase, not --pem-path)");
}

// An encrypted partition, decrypted for this run; the plain squashfs as a descriptor.
OpenedSquashfs open_encrypted(sif::Image image, const sif::Descriptor& primary, const ActionRequest& r,
                              const std::string& work_dir) {
  const std::string& path = image.path();
  const sif::FsType fs = primary.partition().fs_type;
  if (!r.site.allow_encrypted)
    throw Error(path + ": encrypted images are not allowed by the administrator (`allow container encrypted = no`)");
  if (fs == sif::FsType::EncryptedSquashfs)
    // LUKS2 through dm-crypt, Apptainer's format for root and setuid builds. capsa runs
    // without setuid and cannot assume a device mapper (many compute nodes, and
    // containers, have none); decrypting LUKS2 in user space would mean carrying a
    // second implementation of its key slots (Argon2, anti-forensic split) beside
    // libcryptsetup, which itself only opens volumes through dm-crypt. Refused, with
    // the way out: the gocryptfs format, which any user can run.
    throw Error(path +
                ": encrypted with LUKS2 (dm-crypt, FsType 5), which capsa cannot open without a device "
                "mapper; rebuild it with `capsa build --encrypt` (gocryptfs), which runs unprivileged");
  if (fs != sif::FsType::GocryptfsSquashfs)
    throw FormatError(path + ": primary partition (object " + std::to_string(primary.id) + ") is " +
                      std::string(sif::name_of(fs)) + ", not squashfs: capsa runs squashfs images");
  if (!r.encryption_key)
    throw Error(path +
                ": the image is encrypted: give its key with --passphrase or --pem-path PRIVATE_KEY.pem "
                "(or APPTAINER_ENCRYPTION_PASSPHRASE / APPTAINER_ENCRYPTION_PEM_PATH)");
  const bool passphrase = r.encryption_key->kind == encryption::KeyMaterial::Kind::Passphrase;
  if (!passphrase && !r.unwrap_key) throw Error(path + ": this capsa cannot open RSA-wrapped keys (run capsa-full)");
  std::string secret =
      passphrase ? r.encryption_key->passphrase : r.unwrap_key(wrapped_secret_of(image, primary), path);
  SquashfsLocation outer{path, static_cast<std::uint64_t>(primary.offset), static_cast<std::uint64_t>(primary.size)};
  outer.fd = image.fd();
  DecryptedImage plain = decrypt_gocryptfs_partition(outer, secret, work_dir, path);
  std::fill(secret.begin(), secret.end(), '\0');
  SquashfsLocation location{"/proc/self/fd/" + std::to_string(plain.fd.get()), 0, plain.size};
  location.fd = plain.fd.get();
  std::optional<image::SquashfsFiles> files;
  try {
    files.emplace(squashfs::Reader(plain.fd.get(), 0, plain.size, path + ": decrypted partition"));
    files->list_directory("/");
  } catch (const FormatError& e) {
    throw FormatError(std::string(e.what()) + " (the image is damaged or incomplete: copy, pull or build it again)");
  }
  location.opened = files->reader().image();
  return {std::move(image), location, std::move(*files), std::move(plain.fd)};
}

OpenedSquashfs open_squashfs(const std::string& path, const ActionRequest& r, const std::string& work_dir) {
  sif::Image image = sif::Image::open(path);
  const sif::Descriptor* primary = image.primary_partition();
  if (primary == nullptr) throw FormatError(path + ": no primary system partition to run");
  // Any other file system is an encrypted squashfs, or one capsa refuses (said there).
  if (primary->partition().fs_type != sif::FsType::Squashfs) {
    const sif::Descriptor partition = *primary;
    return open_encrypted(std::move(image), partition, r, work_dir);
  }
  if (!squashfs::has_squashfs_magic(image.fd(), static_cast<std::uint64_t>(primary->offset)))
    throw FormatError(path + ": primary partition (object " + std::to_string(primary->id) +
                      ") is marked squashfs but is not squashfs: capsa runs squashfs images");
  SquashfsLocation location{path, static_cast<std::uint64_t>(primary->offset), static_cast<std::uint64_t>(primary->size)};
  location.fd = image.fd();
  // A damaged partition is found here, in one line, rather than as a mount failure (root)
  // or a FUSE server that dies (unprivileged). The root directory is read too: it is
  // what the container needs first, and a cheap check of the tables behind it.
  std::optional<image::SquashfsFiles> files;
  try {
    files.emplace(squashfs::Reader(image.fd(), location.offset, location.size, path + ": primary partition"));
    files->list_directory("/");  // the root's listing: a cheap check of the directory table
  } catch (const FormatError& e) {
    throw FormatError(std::string(e.what()) + " (the image is damaged or incomplete: copy, pull or build it again)");
  }
  location.opened = files->reader().image();  // capsa's FUSE server serves it as opened here
  return {std::move(image), location, std::move(*files), UniqueFd()};
}

// The text of a small regular file of the image (symlinks followed inside it), "" when it
// is missing, not a regular file, over 4 MiB or unreadable.
std::string read_from_image(const image::ImageFiles& files, const std::string& path) {
  try {
    return files.read_file(path, 4 << 20).value_or("");
  } catch (const Error&) {
    return "";
  }
}

// The container's overlay layers: the SIF's own overlay partition (lowest; the writable
// layer with --writable), then the --overlay ones, with Apptainer's rules
// (internal/pkg/runtime/engine/apptainer/prepare_linux.go): one writable layer at most,
// none beside --writable-tmpfs, --overlay not with --writable on a sandbox.
std::vector<OverlayImage> overlay_layers(const ActionRequest& r, const OpenedSquashfs* sif, bool writable_tmpfs) {
  std::vector<OverlayImage> layers;
  if (r.writable && !r.overlays.empty()) throw Error("cannot use --overlay in conjunction with --writable");
  if (sif != nullptr) {
    OverlayImage own = sif_overlay_partition(sif->image, r.writable);
    if (r.writable && !own.writable) {
      throw Error(sif->image.path() +
                  ": --writable needs a writable overlay partition and this SIF has none (add one with `capsa overlay "
                  "create " +
                  sif->image.path() +
                  "`, or use --writable-tmpfs for a temporary writable layer discarded "
                  "at exit, or a sandbox directory)");
    }
    if (r.writable && ::access(own.path.c_str(), W_OK) != 0) throw_errno("--writable: " + own.path);
    if (!own.path.empty()) layers.push_back(own);
  }
  for (const OverlaySpec& spec : r.overlays) layers.push_back(examine_overlay(spec));
  std::string writer;
  for (const OverlayImage& layer : layers) {
    if (!layer.writable) continue;
    if (!writer.empty())  // Apptainer's words
      throw Error("you can't specify more than one writable overlay, " + writer +
                  " contains a writable overlay, requires to use '--overlay " + layer.path + ":ro'");
    writer = layer.path;
  }
  if (writable_tmpfs && !writer.empty())
    throw Error("you can't specify --writable-tmpfs with another writable overlay image (" + writer + ")");
  return layers;
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

// -S/--scratch paths, checked (absolute, not the root) and normalised; with --workdir
// their backing directories WORKDIR/scratch/PATH are made (0750, as Apptainer's).
std::vector<std::string> scratch_directories(const std::vector<std::string>& paths, const std::string& workdir) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::string normal = std::filesystem::path(path).lexically_normal().string();
    if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
    if (normal.empty() || normal[0] != '/' || normal == "/")
      throw Error("--scratch " + path + ": give an absolute path inside the container, such as /scratch");
    if (!workdir.empty()) {
      std::string backing = workdir;
      backing.append("/scratch").append(normal);
      std::error_code error;
      std::filesystem::create_directories(backing, error);
      if (error || ::chmod(backing.c_str(), 0750) != 0)
        throw Error("--scratch: cannot make " + backing + (error ? ": " + error.message() : ""));
    }
    out.push_back(normal);
  }
  return out;
}

// --containlibs: each must be a file on the host (a library, usually).
std::vector<std::string> contained_libraries(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw_errno("--containlibs " + path);
    if (!S_ISREG(st.st_mode)) throw Error("--containlibs " + path + ": not a file");
    out.push_back(std::filesystem::absolute(path).lexically_normal().string());  // its own name, not its target's
  }
  return out;
}

// Under an MPI launcher, the image's MPI must speak the launcher's PMI: warn with a hint
// when its library cache shows it cannot (runtime/mpi_launcher.hpp), before anything hangs.
void warn_about_pmi_mismatch(const Launcher& launcher, const std::string& ldso_cache) {
  if (!launcher.any()) return;
  std::vector<std::string> sonames;
  try {
    for (const auto& entry : gpu::parse_ldso_cache(ldso_cache))
      sonames.push_back(entry.name);
  } catch (const FormatError&) {
    return;  // no or no readable cache: nothing to compare
  }
  if (auto warning = pmi_mismatch(launcher, image_mpi_from_sonames(sonames)))
    log::warning(*warning);
}

// Reads the image's root directory once. Through FUSE the first listing of a directory
// comes with every entry's attributes (READDIRPLUS), so the kernel knows /proc, /etc,
// /tmp... before the mount plan looks them up: one round trip to the server instead of
// one per name.
void list_once(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return;
  alignas(8) char buffer[32768];
  while (::syscall(SYS_getdents64, fd.get(), buffer, sizeof buffer) > 0) {
  }
}

// Whether the environment files may be read from the SIF itself: only when nothing the
// container mounts can cover them (a bind onto /.singularity.d/env/50-mine.sh must be
// seen); else they are read from the container's tree.
bool environment_in_image(const std::vector<MountStep>& plan) {
  for (const MountStep& step : plan)
    if (step.target == "/" || step.target == "/.singularity.d" || step.target.rfind("/.singularity.d/", 0) == 0)
      return false;
  return true;
}

// The generated /etc/passwd and /etc/group of the plan (mount_plan.cpp).
bool is_identity_file(const MountStep& step) {
  return step.kind == MountStep::Kind::SessionFile && (step.target == "/etc/passwd" || step.target == "/etc/group");
}

bool proc_in(const std::vector<MountStep>& plan) {
  for (const MountStep& step : plan)
    if (step.target == "/proc") return true;
  return false;
}

void enter_working_directory(const std::string& wanted, bool explicit_pwd, const std::string& home) {
  if (::chdir(wanted.c_str()) == 0) return;
  if (explicit_pwd) throw_errno("--pwd " + wanted);
  if (::chdir(home.c_str()) == 0 || ::chdir("/") == 0) {
    log::warning(wanted + " does not exist in the container; starting in " + current_directory());
  }
}

}  // namespace

ComposedEnvironment compose_container_environment(const ActionRequest& r, const EnvMap& host, const std::string& home) {
  EnvRequest env_request;
  env_request.host = host;
  env_request.clean = r.cleanenv;
  env_request.env_args = r.env_args;
  env_request.env_files = r.env_files;
  env_request.home = home;
  // As Apptainer (filepath.Abs): absolute but not resolved, so a symlink keeps its name.
  env_request.image_path = std::filesystem::absolute(r.image).lexically_normal().string();
  env_request.command = r.action;
  env_request.binds = format_bind_list(r.binds);
  if (!r.shell.empty()) env_request.host["APPTAINER_SHELL"] = r.shell;
  ComposedEnvironment env = compose_environment(env_request);
  if (!r.shell.empty()) env.process["APPTAINER_SHELL"] = env.process["SINGULARITY_SHELL"] = r.shell;
  if (r.nv || r.nvccli) pass_gpu_selection(env_request.host, env);
  // Apptainer sets both; the image's 95-apps.sh and the action script read SINGULARITY_APPNAME.
  if (!r.app.empty()) env.process["APPTAINER_APPNAME"] = env.process["SINGULARITY_APPNAME"] = r.app;
  if (r.no_eval) env.process["APPTAINER_NO_EVAL"] = env.process["SINGULARITY_NO_EVAL"] = "1";
  return env;
}

bool runs_privileged(const ActionRequest& r) { return ::geteuid() == 0 && !r.userns && !r.fakeroot; }

bool setuid_allowed(const ActionRequest& r) { return r.allow_setuid && runs_privileged(r); }

void launch(const ActionRequest& r) {
  phases::mark("launch");
  if (needs_temporary_image(r)) launch_with_temporary_image(r);
  // Back-to-back containers of one image join the mounts the first one keeps.
  if (r.namespaces.instance == nullptr) join_or_keep_image(r);  // returns when not kept
  // Root with -u/--userns or --fakeroot runs as everyone else does: in a user namespace,
  // image on FUSE.
  const bool privileged = runs_privileged(r);
  // --fakeroot: its mode, chosen before anything changes (unused without the flag).
  const RootMode fakeroot = r.fakeroot ? fakeroot_mode(r.fakeroot_options) : RootMode::fakeroot_auto;
  const std::string image = absolute(r.image);
  struct stat st {};
  if (::stat(image.c_str(), &st) != 0) throw_errno(r.image);
  const bool sandbox = S_ISDIR(st.st_mode);
  std::optional<OpenedSquashfs> sif;
  if (!sandbox) sif = open_squashfs(image, r, session_mount_point());
  // Execution control and the site's image restrictions judged one file: this run mounts
  // that file, through the descriptor opened here (image_mount.cpp), or nothing; a
  // sandbox is bound only if it is still the directory stat'ed here (bind_sandbox).
  if (r.image_checked) {
    const std::optional<FileIdentity> opened =
        sandbox ? std::optional<FileIdentity>(FileIdentity::of(st)) : FileIdentity::of_descriptor(sif->image.fd());
    if (!opened || !(*opened == *r.image_checked))
      throw Error(r.image + " changed after execution control checked it: nothing was run (run the command again)");
    // Held unchanged from here on, then compared once more: a write between the compare
    // above and the lease would have moved the change time.
    if (r.image_content_checked && sif) {
      hold_image_unchanged(sif->image.fd(), r.image);
      const std::optional<FileIdentity> held = FileIdentity::of_descriptor(sif->image.fd());
      if (!held || !(*held == *r.image_checked))
        throw Error(r.image + " changed after execution control checked it: nothing was run (run the command again)");
    }
  }
  bool writable_tmpfs = r.writable_tmpfs;
  if (r.writable && writable_tmpfs) {
    log::warning("Disabling --writable-tmpfs flag, mutually exclusive with --writable");  // Apptainer's words
    writable_tmpfs = false;
  }
  const std::vector<OverlayImage> overlays = overlay_layers(r, sif ? &*sif : nullptr, writable_tmpfs);
  bool writable_overlay = false;
  for (const OverlayImage& layer : overlays) writable_overlay = writable_overlay || layer.writable;
  if (!r.app.empty()) {
    if (sandbox)
      image::require_app(image::DirectoryFiles(image), r.app, r.image);
    else
      image::require_app(sif->files, r.app, r.image);
  }
  // Locked before anything is checked or mounted, and for the container's whole life.
  std::vector<OverlayLock> overlay_locks;
  std::vector<int> overlay_lock_fds;
  for (const OverlayImage& layer : overlays) {
    overlay_locks.push_back(OverlayLock::take(layer.path, layer.writable));
    overlay_lock_fds.push_back(overlay_locks.back().fd());
  }
  hold_for_container(overlay_locks);
  // Bad namespace options fail here, before anything is mounted.
  PrivateNamespaces namespaces = r.namespaces;
  UniqueFd netns;
  if (!namespaces.netns_path.empty()) {
    netns = open_netns_path(namespaces.netns_path, privileged);
    namespaces.netns_fd = netns.get();
  }
  if (namespaces.net) check_networks(r.networks, privileged);
  if (!r.network_args.empty() && !(namespaces.net && needs_cni(r.networks)))
    throw Error("--network-args needs --net with a CNI network (--network bridge, ...)");
  check_capabilities(r.capabilities, privileged);
  std::optional<SeccompProfile> seccomp;
  if (!r.seccomp_profile.empty()) seccomp = SeccompProfile::load(r.seccomp_profile);
  if (!namespaces.hostname.empty()) check_hostname(namespaces.hostname);
  const std::string resolv_conf = r.dns.empty() ? "" : resolv_conf_for(r.dns);
  const std::vector<FuseMountSpec> fuse_specs = parse_fusemounts(r.fusemounts);
  // Checked and made on the host, before any namespace; joined once the image's servers run.
  std::optional<ContainerCgroup> cgroup;
  if (r.cgroups.any()) cgroup = ContainerCgroup::create(cgroup_limits_from(r.cgroups));

  MountRequest mounts;
  mounts.home_source = caller_home();
  // Under --fakeroot the caller's home is root's, /root (Apptainer's launcher, setHome).
  mounts.home_destination = r.fakeroot ? "/root" : mounts.home_source;
  if (!r.home.empty()) {
    mounts.custom_home = true;
    auto colon = r.home.find(':');
    mounts.home_source = r.home.substr(0, colon);
    mounts.home_destination = colon == std::string::npos ? mounts.home_source : r.home.substr(colon + 1);
  }
  mounts.cwd = current_directory();
  mounts.binds = r.binds;
  mounts.contain = r.contain;
  mounts.minimal_dev = r.site.minimal_dev;
  mounts.bind_paths = r.site.bind_paths;
  mounts.no_home = r.no_home;
  mounts.workdir = r.workdir.empty() ? "" : prepare_workdir(r.workdir, r.contain, !r.no_home && !mounts.custom_home);
  std::vector<std::string> unknown_no_mount;
  mounts.no_mount = parse_no_mount(r.no_mount, &unknown_no_mount);
  mounts.generated_resolv_conf = !resolv_conf.empty();
  mounts.generated_hostname = !namespaces.hostname.empty();
  mounts.scratch = scratch_directories(r.scratch, mounts.workdir);
  mounts.libraries = contained_libraries(r.libraries);
  for (const auto& name : unknown_no_mount) log::warning("Ignoring unknown mount type '" + name + "'");
  std::vector<MountStep> plan = plan_mounts(mounts);
  const EnvMap host_environment = current_environment();
  const Launcher launcher = detect_launcher(host_environment);
  for (MountStep& step : launcher_mounts(launcher, host_environment)) plan.push_back(std::move(step));
  std::optional<gpu::NvccliRequest> nvccli;
  std::vector<gpu::DriverPlan> drivers;
  if (r.nvccli) {
    // nvidia-container-cli writes the driver into the root: it needs a writable one.
    nvccli = gpu::nvccli_request(gpu::require_nvidia_container_cli(host_path()), r.contain, !privileged);
    if (!r.writable && !writable_overlay) writable_tmpfs = true;
  } else if (r.nv) {
    drivers.push_back(gpu::plan_nvidia(gpu::host_nvidia_request(r.contain)));
  }
  if (r.rocm) drivers.push_back(gpu::plan_rocm(gpu::host_rocm_request(r.contain)));
  for (const gpu::DriverPlan& driver : drivers) {
    plan.insert(plan.end(), driver.steps.begin(), driver.steps.end());
    for (const auto& warning : driver.warnings) log::warning(warning);
  }
  gpu::CdiPlan cdi;
  if (!r.cdi_devices.empty()) {
    std::vector<std::string> warnings;
    const auto selections =
        gpu::resolve_cdi_devices(r.cdi_devices, r.cdi_dirs.empty() ? gpu::default_cdi_dirs() : r.cdi_dirs, warnings);
    const char* dev = std::getenv("CAPSA_DEV_DIR");
    cdi = gpu::plan_cdi(selections, r.contain, dev && *dev ? dev : "/dev");
    plan.insert(plan.end(), cdi.steps.begin(), cdi.steps.end());
    for (const auto& warning : warnings) log::warning(warning);
    for (const auto& warning : cdi.warnings) log::warning(warning);
    if (cdi.writes_root() && !r.writable && !writable_overlay) writable_tmpfs = true;  // the hooks write into the root
  }
  // Root in a writable container keeps the image's /etc/passwd and /etc/group, so that
  // package scripts may add users (Apptainer's addIdentityMount).
  const bool image_identity = (::geteuid() == 0 || r.fakeroot) && (r.writable || writable_tmpfs || writable_overlay);
  if (image_identity) std::erase_if(plan, is_identity_file);
  if (log::enabled(log::Level::debug)) log::debug("mount plan\n" + describe(plan));

  const std::string session_point = session_mount_point();
  // On the mounted root, before capsa enters it: --nvccli, then the CDI hooks.
  std::function<void(const std::string&)> before_enter;
  if (nvccli || !cdi.root_hooks.empty())
    before_enter = [&nvccli, &cdi, &session_point](const std::string& root) {
      if (nvccli) gpu::configure_root_with_nvccli(*nvccli, root);
      if (!cdi.root_hooks.empty())
        gpu::run_cdi_hooks(cdi.root_hooks, gpu::write_cdi_bundle(session_point, root), "creating");
    };
  // On the host, as the last step before the container's namespaces: the plugins run in
  // the host's mount and network namespaces, and nothing after this may fail for a reason
  // a check could have found first (the attachment is undone when capsa ends, but only then).
  std::optional<ContainerNetwork> network;
  if (namespaces.net && needs_cni(r.networks)) {
    network = ContainerNetwork::attach(r.networks, r.network_args,
                                       cni_paths(r.site.cni_configuration_path, r.site.cni_plugin_path));
    namespaces.net = false;
    namespaces.netns_fd = network->namespace_fd();
  }
  phases::mark("checked");
  if (r.fakeroot)
    enter_fakeroot_namespaces(fakeroot);
  else
    enter_container_namespaces({::getuid(), ::getgid(), r.userns});
  make_mounts_private(r.site.mount_slave);
  phases::mark("namespaces");
  // The image's own files capsa needs are read on a thread of its own while the image is
  // being mounted (system calls, on this thread): unpacking the block that holds them is
  // a third of a millisecond in a gzip image. Threads may only start after the unshare.
  std::optional<image::DirectoryFiles> sandbox_files;
  if (sandbox) sandbox_files.emplace(image);
  const image::ImageFiles& image_files = sandbox ? static_cast<const image::ImageFiles&>(*sandbox_files) : sif->files;
  auto read_image = [&](const std::string& path) { return read_from_image(image_files, path); };
  std::string image_passwd, image_group, image_ldso_cache;
  std::exception_ptr read_failure;
  std::jthread reading([&] {
    try {
      image_passwd = read_image("/etc/passwd");
      image_group = read_image("/etc/group");
      if (launcher.any()) image_ldso_cache = read_image("/etc/ld.so.cache");
    } catch (...) {
      read_failure = std::current_exception();
    }
  });
  // Composed before the image's FUSE server is forked, not while it starts: after the
  // fork every page capsa writes that the server shares is copied first (about 2 us a
  // page on the VMs measured), and composing the environment writes many.
  ComposedEnvironment env = compose_container_environment(r, host_environment, mounts.home_destination);
  for (const auto& [name, value] : cdi.env) env.process[name] = value;  // as the spec says, also with --cleanenv
  if (r.namespaces.instance != nullptr)  // an instance's processes know its name, as Apptainer's
    env.process["APPTAINER_INSTANCE"] = env.process["SINGULARITY_INSTANCE"] = r.namespaces.instance->name;
  for (const auto& warning : env.warnings) log::warning(warning);
  if (auto warning = cleanenv_drops_launcher(launcher, r.cleanenv)) log::warning(*warning);
  CallerAccount account = caller_account(mounts.home_destination);
  const std::string session_options = "mode=0755,size=" + std::to_string(r.site.session_size_mib) + "m";
  if (::mount("capsa-session", session_point.c_str(), r.site.memory_fs_type.c_str(), MS_NOSUID | MS_NODEV,
              session_options.c_str()) != 0)
    throw_errno("mounting the session tmpfs on " + session_point);
  const std::string image_root = session_point + "/image";
  if (::mkdir(image_root.c_str(), 0755) != 0) throw_errno(image_root);
  phases::mark("session");
  ImageMount mounted;
  if (sandbox) {
    bind_sandbox(image, st, image_root);
  } else {
    mounted = mount_squashfs(sif->location, image_root, privileged, {r.site.kernel_squashfs, r.site.lone_gzip_fuse});
  }
  phases::mark("image-mount-started");
  const OverlayLayers layers =
      mount_overlays(overlays, overlay_lock_fds, session_point, privileged, r.site.kernel_extfs);
  reading.join();
  if (read_failure) std::rethrow_exception(read_failure);
  warn_about_pmi_mismatch(launcher, image_ldso_cache);
  std::vector<std::pair<std::string, std::string>> files;
  if (!image_identity)
    files = {{"passwd", passwd_with_caller(image_passwd, account)}, {"group", group_with_caller(image_group, account)}};
  if (!resolv_conf.empty()) files.emplace_back("resolv.conf", resolv_conf);
  if (!namespaces.hostname.empty()) files.emplace_back("hostname", namespaces.hostname + "\n");

  phases::mark("environment");
  if (sif) await_image(mounted, sif->location, image_root);
  if (mounted.driver != MountDriver::KernelLoop) list_once(image_root);
  phases::mark("image-ready");
  // Read while the root is built and the command starts (command_prefetch.hpp).
  const auto path = env.process.find("PATH");
  CommandPrefetch prefetch =
      CommandPrefetch::start(image_root, sif && r.action == "exec" && !r.args.empty() ? r.args[0] : "",
                             path == env.process.end() ? "" : path->second);
  RootLayout layout;
  layout.session = session_point;
  layout.writable_tmpfs = writable_tmpfs;
  layout.privileged = privileged;
  layout.writable_image = r.writable && sandbox;
  layout.overlay_lowers = layers.lowers;
  layout.overlay_upper = layers.upper;
  layout.overlay_work = layers.work;
  layout.upper_on_fuse = layers.upper_on_fuse;
  layout.upper_on_capsa_fuse = layers.upper_on_capsa_fuse;
  layout.underlay = underlay_chosen(r.underlay, r.site.enable_underlay, r.site.enable_overlay,
                                    writable_tmpfs || !overlays.empty(), r.writable);
  layout.allow_setuid = setuid_allowed(r);
  if (layout.underlay) log::verbose("the container's root is an underlay (a tmpfs of binds of the image's entries)");
  // --fusemount host: programs start from the host's view (they wait for their mount).
  FuseMounts fuse_mounts = FuseMounts::prepare(fuse_specs);
  // The FUSE servers stay outside: the limits are the container's, not capsa's helpers'.
  if (cgroup) cgroup->join();
  build_root_and_enter(layout, plan, files, before_enter);
  // The exec ends the reading ahead where it is, unless a step below needs this process
  // to have one thread (unshare, capset, seccomp) or starts a program first.
  if (namespaces.any() || r.capabilities.any() || r.fakeroot || seccomp || !cdi.start_hooks.empty())
    prefetch.finish();
  else
    prefetch.leave_to_exec();
  if (!fuse_mounts.empty()) fuse_mounts.mount_all();
  phases::mark("root-entered");
  if (namespaces.any()) enter_private_namespaces(namespaces);
  if (r.no_umask) ::umask(022);
  if (r.capabilities.any()) apply_capabilities(r.capabilities);

  enter_working_directory(r.pwd.empty() ? mounts.cwd : r.pwd, !r.pwd.empty(), mounts.home_destination);
  if (!cdi.start_hooks.empty()) gpu::run_cdi_hooks(cdi.start_hooks, session_point + "/bundle", "created");
  if (r.fakeroot) start_root_emulation(fakeroot, r.fakeroot_options.ignore_emulation, proc_in(plan), env.process);
  if (seccomp) seccomp->install();  // last: what runs after it is reading the environment files and the exec
  if (sif && environment_in_image(plan)) exec_in_container(r, env, sif->files);
  exec_in_container(r, env, image::DirectoryFiles("/"));
}

}  // namespace capsa::runtime
