#include "runtime/gpu/nvidia.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "runtime/gpu/nvliblist.hpp"
#include "util/fd.hpp"

namespace capsa::runtime::gpu {
namespace {

// /dev/nvidia0.., nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, nvidia-caps/.
void add_devices(const std::string& dev_dir, DriverPlan& plan) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(dev_dir.c_str()), ::closedir);
  if (!dir) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir.get())) {
    std::string name = e->d_name;
    if (name.rfind("nvidia", 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string source = dev_dir + "/" + name;
    struct stat st {};
    if (::stat(source.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && name == "nvidia-caps") {
      plan.steps.push_back(MountStep{MountStep::Kind::Bind, source, "/dev/" + name});
    } else if (S_ISCHR(st.st_mode)) {
      MountStep step{MountStep::Kind::Bind, source, "/dev/" + name};
      step.directory = false;  // required: a device that cannot be bound is an error
      plan.steps.push_back(step);
    }
  }
}

}  // namespace

DriverPlan plan_nvidia(const DriverRequest& r) {
  DriverPlan plan =
      plan_driver_files(parse_driver_file_list(read_whole_file(r.list_path)), r.cache_path, r.host_path, "NVIDIA");
  if (::access("/var/run/nvidia-persistenced/socket", F_OK) == 0)
    plan.steps.push_back(read_only_file("/var/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket"));
  if (r.contain) add_devices(r.dev_dir, plan);
  if (plan.libraries == 0 && plan.programs == 0 && plan.warnings.empty())  // one warning, not two
    plan.warnings.push_back("--nv: no NVIDIA driver libraries or programs found on this host; running without them");
  return plan;
}

DriverRequest host_nvidia_request(bool contain) {
  return host_driver_request(driver_file_list_path("nvliblist.conf", "CAPSA_NVLIBLIST"), contain);
}

}  // namespace capsa::runtime::gpu
