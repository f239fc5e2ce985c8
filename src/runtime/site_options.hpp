#pragma once
// What the administrator's configuration (config/site_config.hpp, runtime/site_policy.hpp)
// sets for the mounts of a run; the defaults are Apptainer's.
#include <string>
#include <vector>

#include "runtime/bind_spec.hpp"
#include "runtime/mount_plan.hpp"

namespace capsa::runtime {

struct SiteOptions {
  std::vector<BindSpec> bind_paths = default_bind_paths();  // `bind path`
  bool minimal_dev = false;                                 // `mount dev = minimal`
  std::string memory_fs_type = "tmpfs";                     // `memory fs type`: tmpfs or ramfs
  unsigned long session_size_mib = 64;                      // `sessiondir max size`
  bool allow_encrypted = true;                              // `allow container encrypted`
  bool kernel_squashfs = true;                              // `allow kernel squashfs`: root may loop-mount
  bool kernel_extfs = true;  // `allow kernel extfs`: root may loop-mount ext3 files only root writes
  bool lone_gzip_fuse = true;                               // `fuse for lone gzip images` (runtime/lone_start.hpp)
  bool mount_slave = true;                                  // `mount slave`: host mounts propagate in
  unsigned long keep_image_seconds = 3;                     // `keep image seconds` (runtime/kept_image.hpp)
  std::string cni_configuration_path;                       // `cni configuration path` ("": PREFIX/etc/capsa/network)
  std::string cni_plugin_path;                              // `cni plugin path` ("": /usr/lib/cni)
  std::string enable_overlay = "yes";                       // `enable overlay`: no leaves the underlay
  std::string enable_underlay = "yes";                      // `enable underlay`: yes, no, preferred
};

}  // namespace capsa::runtime
