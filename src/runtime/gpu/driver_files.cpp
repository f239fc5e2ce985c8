#include "runtime/gpu/driver_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <set>

#include "runtime/gpu/ldso_cache.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"

namespace capsa::runtime::gpu {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Every cache name with a listed prefix, each once, with the first (preferred) path.
void add_libraries(const std::vector<std::string>& prefixes, const std::vector<CacheEntry>& cache, DriverPlan& plan) {
  std::set<std::string> seen;
  for (const std::string& prefix : prefixes)
    for (const CacheEntry& entry : cache)
      if (starts_with(entry.name, prefix) && entry.name.find('/') == std::string::npos &&
          starts_with(entry.path, "/") && seen.insert(entry.name).second && ::access(entry.path.c_str(), R_OK) == 0) {
        plan.steps.push_back(read_only_file(entry.path, std::string(kLibsDir) + "/" + entry.name));
        ++plan.libraries;
      }
}

// Real caches are well under a megabyte; the limit keeps a wrong CAPSA_LDSO_CACHE
// (a device, a huge file) from hanging or exhausting memory.
constexpr off_t kMaxCacheSize = 64 << 20;

std::vector<CacheEntry> read_cache(const std::string& path, const std::string& flag, DriverPlan& plan) {
  try {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw_errno("stat");
    if (!S_ISREG(st.st_mode) || st.st_size > kMaxCacheSize) throw FormatError("not a regular file under 64 MiB");
    return parse_ldso_cache(read_whole_file(path));
  } catch (const Error& e) {
    plan.warnings.push_back("cannot read the ld.so cache " + path + " (" + e.what() + "): no " + flag +
                            " libraries bound");
    return {};
  }
}

}  // namespace

MountStep read_only_file(std::string source, std::string target) {
  MountStep step{MountStep::Kind::Bind, std::move(source), std::move(target)};
  step.read_only = true;
  step.directory = false;
  step.required = false;
  return step;
}

DriverPlan plan_driver_files(const DriverFileList& list, const std::string& cache_path, const std::string& host_path,
                             const std::string& flag) {
  DriverPlan plan;
  if (!list.libraries.empty()) add_libraries(list.libraries, read_cache(cache_path, flag, plan), plan);
  for (const std::string& name : list.binaries)
    if (std::string found = find_executable(name, host_path, RelativeEntries::Skip); !found.empty()) {
      plan.steps.push_back(read_only_file(found, "/usr/bin/" + name));
      ++plan.programs;
    }
  for (const std::string& file : list.files)
    if (::access(file.c_str(), R_OK) == 0) plan.steps.push_back(read_only_file(file, file));
  return plan;
}

DriverRequest host_driver_request(std::string list_path, bool contain) {
  DriverRequest r;
  r.list_path = std::move(list_path);
  r.cache_path = ldso_cache_path();
  const char* path = std::getenv("PATH");
  r.host_path = path ? path : "/usr/bin:/bin";
  const char* dev = std::getenv("CAPSA_DEV_DIR");
  r.dev_dir = dev && *dev ? dev : "/dev";
  r.contain = contain;
  return r;
}

}  // namespace capsa::runtime::gpu
