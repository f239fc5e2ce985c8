#include "runtime/gpu/nvidia.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>

#include "runtime/gpu/ldso_cache.hpp"
#include "runtime/gpu/nvliblist.hpp"
#include "util/error.hpp"
#include "util/find_executable.hpp"
#include "util/fd.hpp"

namespace capsa::runtime::gpu {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

MountStep read_only_file(std::string source, std::string target) {
  MountStep step{MountStep::Kind::Bind, std::move(source), std::move(target)};
  step.read_only = true;
  step.directory = false;
  step.required = false;  // gone between planning and mounting: skipped, as never found
  return step;
}

// Every cache name with a listed prefix, each once, with the first (preferred) path.
void add_libraries(const std::vector<std::string>& prefixes, const std::vector<CacheEntry>& cache, NvidiaPlan& plan) {
  std::set<std::string> seen;
  for (const std::string& prefix : prefixes)
    for (const CacheEntry& entry : cache)
      if (starts_with(entry.name, prefix) && entry.name.find('/') == std::string::npos && starts_with(entry.path, "/") &&
          seen.insert(entry.name).second && ::access(entry.path.c_str(), R_OK) == 0) {
        plan.steps.push_back(read_only_file(entry.path, std::string(kLibsDir) + "/" + entry.name));
        ++plan.libraries;
      }
}

// Real caches are well under a megabyte; the limit keeps a wrong CAPSA_LDSO_CACHE
// (a device, a huge file) from hanging or exhausting memory.
constexpr off_t kMaxCacheSize = 64 << 20;

std::vector<CacheEntry> read_cache(const std::string& path, NvidiaPlan& plan) {
  try {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw_errno("stat");
    if (!S_ISREG(st.st_mode) || st.st_size > kMaxCacheSize) throw FormatError("not a regular file under 64 MiB");
    return parse_ldso_cache(read_whole_file(path));
  } catch (const Error& e) {
    plan.warnings.push_back("cannot read the ld.so cache " + path + " (" + e.what() + "): no NVIDIA libraries bound");
    return {};
  }
}

// /dev/nvidia0.., nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, nvidia-caps/.
void add_devices(const std::string& dev_dir, NvidiaPlan& plan) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(dev_dir.c_str()), ::closedir);
  if (!dir) return;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir.get())) {
    std::string name = e->d_name;
    if (starts_with(name, "nvidia")) names.push_back(name);
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

NvidiaPlan plan_nvidia(const NvidiaRequest& r) {
  NvidiaPlan plan;
  DriverFileList list = parse_driver_file_list(read_whole_file(r.list_path));
  add_libraries(list.libraries, read_cache(r.cache_path, plan), plan);
  std::size_t programs = 0;
  for (const std::string& name : list.binaries)
    if (std::string found = find_executable(name, r.host_path, RelativeEntries::Skip); !found.empty()) {
      plan.steps.push_back(read_only_file(found, "/usr/bin/" + name));
      ++programs;
    }
  for (const std::string& file : list.files)
    if (::access(file.c_str(), R_OK) == 0) plan.steps.push_back(read_only_file(file, file));
  if (::access("/var/run/nvidia-persistenced/socket", F_OK) == 0)
    plan.steps.push_back(read_only_file("/var/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket"));
  if (r.contain) add_devices(r.dev_dir, plan);
  if (plan.libraries == 0 && programs == 0 && plan.warnings.empty())  // one warning, not two
    plan.warnings.push_back("--nv: no NVIDIA driver libraries or programs found on this host; running without them");
  return plan;
}

NvidiaRequest host_nvidia_request(bool contain) {
  NvidiaRequest r;
  r.list_path = driver_file_list_path();
  r.cache_path = ldso_cache_path();
  const char* path = std::getenv("PATH");
  r.host_path = path ? path : "/usr/bin:/bin";
  const char* dev = std::getenv("CAPSA_DEV_DIR");
  r.dev_dir = dev && *dev ? dev : "/dev";
  r.contain = contain;
  return r;
}

}  // namespace capsa::runtime::gpu
