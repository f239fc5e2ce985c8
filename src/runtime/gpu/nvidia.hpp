#pragma once
// `--nv`: the host's NVIDIA driver as mount steps (docs/gpu.md): the listed libraries
// found in the ld.so cache, read-only under /.singularity.d/libs; the listed programs
// found on PATH, at /usr/bin/<name>; the listed files at their own paths; the
// /dev/nvidia* devices when /dev is contained (otherwise the host's /dev is already there).
#include <string>
#include <vector>

#include "runtime/mount_plan.hpp"

namespace capsa::runtime::gpu {

inline constexpr const char* kLibsDir = "/.singularity.d/libs";

struct NvidiaRequest {
  std::string list_path;   // nvliblist.conf
  std::string cache_path;  // the ld.so cache
  std::string host_path;   // the host's PATH, for the programs
  std::string dev_dir;     // the host's /dev (CAPSA_DEV_DIR in tests)
  bool contain = false;    // /dev is a tmpfs: bind the devices one by one
};

struct NvidiaPlan {
  std::vector<MountStep> steps;
  std::vector<std::string> warnings;  // one line each
  std::size_t libraries = 0;          // how many library steps
};

NvidiaPlan plan_nvidia(const NvidiaRequest& request);

// The request for this host: the installed list, CAPSA_LDSO_CACHE, PATH, CAPSA_DEV_DIR.
NvidiaRequest host_nvidia_request(bool contain);

}  // namespace capsa::runtime::gpu
