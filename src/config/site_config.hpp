#pragma once
// The administrator's configuration as capsa uses it: the typed values of the directives
// capsa acts on (docs/administration.md). The rest of apptainer.conf is read, checked and
// left at that.
#include <string>
#include <vector>

#include "config/config_file.hpp"

namespace capsa::config {

struct SiteConfig {
  std::string origin;  // the file(s) these come from, for messages ("" for the defaults)
  // Default binds of every container: SRC[:DEST[:ro|rw]] (Apptainer's `bind path`).
  std::vector<std::string> bind_paths{"/etc/localtime", "/etc/hosts"};
  bool mount_proc = true, mount_sys = true, mount_devpts = true, mount_home = true, mount_tmp = true;
  std::string mount_dev = "yes";  // yes | no | minimal
  bool mount_hostfs = false;
  bool mount_slave = true;
  bool config_resolv_conf = true;
  bool user_bind_control = true;
  bool enable_fusemount = true;
  std::string enable_overlay = "yes";   // yes | no | try | driver
  std::string enable_underlay = "yes";  // yes | no | preferred
  unsigned long max_loop_devices = 256;
  bool shared_loop_devices = false;
  std::vector<std::string> limit_container_paths, limit_container_owners, limit_container_groups;
  bool allow_container_sif = true, allow_container_encrypted = true, allow_container_squashfs = true,
       allow_container_extfs = true, allow_container_dir = true;
  bool allow_kernel_squashfs = true, allow_kernel_extfs = true;
  bool fuse_for_lone_gzip_images = true;  // capsa's own: root's gzip images without other users go through FUSE
  bool allow_pid_ns = true, allow_uts_ns = true;
  bool always_use_nv = false, always_use_rocm = false, use_nvidia_container_cli = false;
  std::string memory_fs_type = "tmpfs";  // tmpfs | ramfs
  unsigned long sessiondir_max_size_mib = 64;
  unsigned long keep_image_seconds = 3;  // capsa's own: how long a kept image outlives its last container
  unsigned long mksquashfs_procs = 0;  // 0: every CPU
  std::string mksquashfs_mem;          // "": no limit; else 500M, 1G...
  std::string cni_configuration_path;  // "": PREFIX/etc/capsa/network
  std::string cni_plugin_path;         // "": the distribution's (/usr/lib/cni)

  bool operator==(const SiteConfig&) const = default;
};

// The values `file` gives (its defaults where it says nothing; see ConfigFile::read for
// `bind path`).
SiteConfig site_config_from(const ConfigFile& file);

// What an unprivileged user's own file (-c, CAPSA_CONFIG) may change: anything, except
// that no restriction of the administrator's file is loosened. Every directive that
// restricts takes the stricter of the two (docs/administration.md lists them); the
// others are the user's.
SiteConfig tighten(const SiteConfig& user, const SiteConfig& system);

// The configuration in force in this process, for engine code far from the command line
// (the squashfs writer's `mksquashfs procs`): Apptainer's defaults until the command line
// has loaded the site's (cli/site_config.hpp).
const SiteConfig& active_site_config();
void set_active_site_config(const SiteConfig& config);

}  // namespace capsa::config
