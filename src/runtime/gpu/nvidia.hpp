#pragma once
// `--nv`: the host's NVIDIA driver as mount steps (docs/gpu.md): the files of
// nvliblist.conf (driver_files.hpp); the persistenced socket; the /dev/nvidia* devices
// when /dev is contained (otherwise the host's /dev is already there).
#include "runtime/gpu/driver_files.hpp"

namespace capsa::runtime::gpu {

DriverPlan plan_nvidia(const DriverRequest& request);

// The request for this host: the installed nvliblist.conf, CAPSA_LDSO_CACHE, PATH, CAPSA_DEV_DIR.
DriverRequest host_nvidia_request(bool contain);

}  // namespace capsa::runtime::gpu
