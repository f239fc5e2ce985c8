#pragma once
// `--rocm`: the host's AMD ROCm driver as mount steps, as Apptainer's
// internal/pkg/util/gpu/rocm.go (docs/gpu.md): the files of rocmliblist.conf
// (driver_files.hpp); /dev/kfd and /dev/dri when /dev is contained (otherwise the
// host's whole /dev is already there).
#include "runtime/gpu/driver_files.hpp"

namespace capsa::runtime::gpu {

DriverPlan plan_rocm(const DriverRequest& request);

// The request for this host: the installed rocmliblist.conf, CAPSA_LDSO_CACHE, PATH, CAPSA_DEV_DIR.
DriverRequest host_rocm_request(bool contain);

}  // namespace capsa::runtime::gpu
