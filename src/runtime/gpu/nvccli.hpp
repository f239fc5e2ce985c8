#pragma once
// `--nvccli`: the driver is set up in the container's root by libnvidia-container's
// `nvidia-container-cli configure`, as Apptainer does (docs/gpu.md), instead of by capsa's own list.
#include <string>
#include <vector>

namespace capsa::runtime::gpu {

struct NvccliRequest {
  std::string cli;                 // the nvidia-container-cli found on PATH
  std::string visible_devices;     // NVIDIA_VISIBLE_DEVICES: indices, UUIDs, MIG-…, all
  std::string capabilities;        // NVIDIA_DRIVER_CAPABILITIES, default compute,utility
  bool user_namespace = false;     // capsa runs unprivileged: pass --user
};

// nvidia-container-cli on the host PATH; throws a one-line error naming the package if absent.
std::string require_nvidia_container_cli(const std::string& host_path);

// The request from the host environment, with Apptainer's defaults (all devices unless
// contained, compute,utility).
NvccliRequest nvccli_request(const std::string& cli, bool contain, bool user_namespace);

// The argv of `nvidia-container-cli configure` for `rootfs`.
std::vector<std::string> nvccli_argv(const NvccliRequest& request, const std::string& rootfs);

// Runs it on the mounted (writable) root before capsa enters it; throws if it fails.
void configure_root_with_nvccli(const NvccliRequest& request, const std::string& rootfs);

}  // namespace capsa::runtime::gpu
