#include "runtime/gpu/rocm.hpp"

#include <sys/stat.h>

#include "runtime/gpu/nvliblist.hpp"
#include "util/fd.hpp"

namespace capsa::runtime::gpu {

DriverPlan plan_rocm(const DriverRequest& r) {
  DriverPlan plan =
      plan_driver_files(parse_driver_file_list(read_whole_file(r.list_path)), r.cache_path, r.host_path, "ROCm");
  if (r.contain) {
    // Apptainer binds the whole /dev/dri (every card and render node) and /dev/kfd.
    struct stat st {};
    if (::stat((r.dev_dir + "/dri").c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      plan.steps.push_back(MountStep{MountStep::Kind::Bind, r.dev_dir + "/dri", "/dev/dri"});
    if (::stat((r.dev_dir + "/kfd").c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
      MountStep kfd{MountStep::Kind::Bind, r.dev_dir + "/kfd", "/dev/kfd"};
      kfd.directory = false;  // required: a device that cannot be bound is an error
      plan.steps.push_back(kfd);
    }
  }
  if (plan.libraries == 0 && plan.programs == 0 && plan.warnings.empty())
    plan.warnings.emplace_back("--rocm: no ROCm driver libraries or programs found on this host; running without them");
  return plan;
}

DriverRequest host_rocm_request(bool contain) {
  return host_driver_request(driver_file_list_path("rocmliblist.conf", "CAPSA_ROCMLIBLIST"), contain);
}

}  // namespace capsa::runtime::gpu
