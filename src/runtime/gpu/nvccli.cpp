#include "runtime/gpu/nvccli.hpp"

#include <cstdlib>
#include <sstream>

#include "runtime/gpu/nvidia.hpp"
#include "util/error.hpp"
#include "util/find_executable.hpp"
#include "util/log.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime::gpu {
namespace {

std::string host_env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string require_nvidia_container_cli(const std::string& host_path) {
  std::string cli = find_executable("nvidia-container-cli", host_path, RelativeEntries::Skip);
  if (cli.empty())
    throw Error("--nvccli needs nvidia-container-cli on PATH; install libnvidia-container-tools (or use --nv)");
  return cli;
}

NvccliRequest nvccli_request(const std::string& cli, bool contain, bool user_namespace) {
  NvccliRequest r;
  r.cli = cli;
  r.user_namespace = user_namespace;
  r.visible_devices = host_env("NVIDIA_VISIBLE_DEVICES");
  if (r.visible_devices.empty() && !contain) r.visible_devices = "all";
  r.capabilities = host_env("NVIDIA_DRIVER_CAPABILITIES");
  if (r.capabilities.empty()) r.capabilities = "compute,utility";
  return r;
}

std::vector<std::string> nvccli_argv(const NvccliRequest& r, const std::string& rootfs) {
  std::vector<std::string> argv = {r.cli};
  if (r.user_namespace) argv.push_back("--user");
  argv.insert(argv.end(), {"configure", "--no-cgroups"});
  if (!r.visible_devices.empty() && r.visible_devices != "none" && r.visible_devices != "void")
    argv.push_back("--device=" + r.visible_devices);
  std::istringstream caps(r.capabilities);
  for (std::string cap; std::getline(caps, cap, ',');)
    if (cap == "all") {
      for (const char* each : {"compute", "compat32", "graphics", "utility", "video", "display"})
        argv.push_back(std::string("--") + each);
    } else if (!cap.empty()) {
      argv.push_back("--" + cap);
    }
  std::string ldconfig = find_executable("ldconfig", "/sbin:/usr/sbin:/usr/bin:/bin", RelativeEntries::Skip);
  if (!ldconfig.empty()) argv.push_back("--ldconfig=@" + ldconfig);
  argv.push_back(rootfs);
  return argv;
}

void configure_root_with_nvccli(const NvccliRequest& request, const std::string& rootfs) {
  ExitStatus status = run_to_end({.argv = nvccli_argv(request, rootfs)});
  if (!status.success())
    throw Error("nvidia-container-cli configure failed (exit status " + std::to_string(status.code()) +
                "); see its message above");
}

}  // namespace capsa::runtime::gpu
