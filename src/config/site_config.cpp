#include "config/site_config.hpp"

#include <algorithm>
#include <cstdlib>

#include "config/directives.hpp"

namespace capsa::config {
namespace {

// The directive's first value in the file, else its default.
std::string text_of(const ConfigFile& file, std::string_view name) {
  std::vector<std::string> values = file.values(name);
  if (!values.empty()) return values.front();
  const Directive* d = find_directive(name);
  return d == nullptr ? std::string() : std::string(d->default_value);
}

bool yes(const ConfigFile& file, std::string_view name) { return text_of(file, name) == "yes"; }

unsigned long number_of(const ConfigFile& file, std::string_view name) {
  return std::strtoul(text_of(file, name).c_str(), nullptr, 10);  // checked by the parser
}

// Stricter of two positive limits where 0 means none (mksquashfs procs).
unsigned long lower_limit(unsigned long a, unsigned long b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

// How much of the host a `mount dev` value shows: no < minimal < yes.
int dev_rank(const std::string& value) { return value == "no" ? 0 : value == "minimal" ? 1 : 2; }

}  // namespace

SiteConfig site_config_from(const ConfigFile& file) {
  SiteConfig c;
  // Apptainer: a file without `bind path` has none; only no file at all has the defaults.
  if (file.read()) c.bind_paths = file.values("bind path");
  c.mount_proc = yes(file, "mount proc");
  c.mount_sys = yes(file, "mount sys");
  c.mount_devpts = yes(file, "mount devpts");
  c.mount_home = yes(file, "mount home");
  c.mount_tmp = yes(file, "mount tmp");
  c.mount_dev = text_of(file, "mount dev");
  c.mount_hostfs = yes(file, "mount hostfs");
  c.mount_slave = yes(file, "mount slave");
  c.config_resolv_conf = yes(file, "config resolv_conf");
  c.user_bind_control = yes(file, "user bind control");
  c.enable_fusemount = yes(file, "enable fusemount");
  c.enable_overlay = text_of(file, "enable overlay");
  c.enable_underlay = text_of(file, "enable underlay");
  c.max_loop_devices = number_of(file, "max loop devices");
  c.shared_loop_devices = yes(file, "shared loop devices");
  c.limit_container_paths = file.values("limit container paths");
  c.limit_container_owners = file.values("limit container owners");
  c.limit_container_groups = file.values("limit container groups");
  c.allow_container_sif = yes(file, "allow container sif");
  c.allow_container_encrypted = yes(file, "allow container encrypted");
  c.allow_container_squashfs = yes(file, "allow container squashfs");
  c.allow_container_extfs = yes(file, "allow container extfs");
  c.allow_container_dir = yes(file, "allow container dir");
  c.allow_kernel_squashfs = yes(file, "allow kernel squashfs");
  c.fuse_for_lone_gzip_images = yes(file, "fuse for lone gzip images");
  c.allow_kernel_extfs = yes(file, "allow kernel extfs");
  c.allow_pid_ns = yes(file, "allow pid ns");
  c.allow_uts_ns = yes(file, "allow uts ns");
  c.always_use_nv = yes(file, "always use nv");
  c.always_use_rocm = yes(file, "always use rocm");
  c.use_nvidia_container_cli = yes(file, "use nvidia-container-cli");
  c.memory_fs_type = text_of(file, "memory fs type");
  c.sessiondir_max_size_mib = number_of(file, "sessiondir max size");
  c.keep_image_seconds = number_of(file, "keep image seconds");
  c.mksquashfs_procs = number_of(file, "mksquashfs procs");
  c.mksquashfs_mem = text_of(file, "mksquashfs mem");
  c.cni_configuration_path = text_of(file, "cni configuration path");
  c.cni_plugin_path = text_of(file, "cni plugin path");
  return c;
}

SiteConfig tighten(const SiteConfig& user, const SiteConfig& system) {
  SiteConfig c = user;
  // User binds refused: the user's file adds none either.
  if (!system.user_bind_control) c.bind_paths = system.bind_paths;
  auto both = [](bool& value, bool system_value) { value = value && system_value; };
  both(c.mount_proc, system.mount_proc);
  both(c.mount_sys, system.mount_sys);
  both(c.mount_devpts, system.mount_devpts);
  both(c.mount_home, system.mount_home);
  both(c.mount_tmp, system.mount_tmp);
  if (dev_rank(system.mount_dev) < dev_rank(c.mount_dev)) c.mount_dev = system.mount_dev;
  both(c.mount_hostfs, system.mount_hostfs);
  // `no` keeps the host's resolv.conf out of containers: a user's file does not bring it in.
  both(c.config_resolv_conf, system.config_resolv_conf);
  both(c.user_bind_control, system.user_bind_control);
  both(c.enable_fusemount, system.enable_fusemount);
  if (system.enable_overlay == "no") c.enable_overlay = "no";
  if (system.enable_underlay == "no") c.enable_underlay = "no";
  c.max_loop_devices = std::min(c.max_loop_devices, system.max_loop_devices);
  // A limit of the system's holds whatever the user's file says; one of the user's only
  // where the system has none.
  if (!system.limit_container_paths.empty()) c.limit_container_paths = system.limit_container_paths;
  if (!system.limit_container_owners.empty()) c.limit_container_owners = system.limit_container_owners;
  if (!system.limit_container_groups.empty()) c.limit_container_groups = system.limit_container_groups;
  both(c.allow_container_sif, system.allow_container_sif);
  both(c.allow_container_encrypted, system.allow_container_encrypted);
  both(c.allow_container_squashfs, system.allow_container_squashfs);
  both(c.allow_container_extfs, system.allow_container_extfs);
  both(c.allow_container_dir, system.allow_container_dir);
  both(c.allow_kernel_squashfs, system.allow_kernel_squashfs);
  both(c.allow_kernel_extfs, system.allow_kernel_extfs);
  both(c.allow_pid_ns, system.allow_pid_ns);
  both(c.allow_uts_ns, system.allow_uts_ns);
  c.sessiondir_max_size_mib = std::min(c.sessiondir_max_size_mib, system.sessiondir_max_size_mib);
  // A ramfs has no size limit: a user's ramfs would undo `sessiondir max size`. The user
  // may choose tmpfs where the system says ramfs (that only adds a limit), not the reverse.
  if (system.memory_fs_type != "ramfs") c.memory_fs_type = system.memory_fs_type;
  c.keep_image_seconds = std::min(c.keep_image_seconds, system.keep_image_seconds);
  c.mksquashfs_procs = lower_limit(c.mksquashfs_procs, system.mksquashfs_procs);
  if (!system.mksquashfs_mem.empty() &&
      (c.mksquashfs_mem.empty() || memory_size_bytes(system.mksquashfs_mem) < memory_size_bytes(c.mksquashfs_mem)))
    c.mksquashfs_mem = system.mksquashfs_mem;
  // The programs root runs for a network are the administrator's to choose.
  c.cni_configuration_path = system.cni_configuration_path;
  c.cni_plugin_path = system.cni_plugin_path;
  return c;
}

namespace {
SiteConfig& active() {
  static SiteConfig config;
  return config;
}
}  // namespace

const SiteConfig& active_site_config() { return active(); }
void set_active_site_config(const SiteConfig& config) { active() = config; }

}  // namespace capsa::config
