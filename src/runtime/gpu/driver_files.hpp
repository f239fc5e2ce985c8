#pragma once
// The part `--nv` and `--rocm` share (docs/gpu.md): a list file (nvliblist.conf,
// rocmliblist.conf) turned into read-only binds of the host's driver files: the listed
// libraries found in the ld.so cache, at /.singularity.d/libs/<name>; the listed programs
// found on PATH, at /usr/bin/<name>; the listed files at their own paths.
#include <string>
#include <vector>

#include "runtime/gpu/nvliblist.hpp"
#include "runtime/mount_plan.hpp"

namespace capsa::runtime::gpu {

inline constexpr const char* kLibsDir = "/.singularity.d/libs";

// What a GPU flag asks of the host; the paths are overridable for tests.
struct DriverRequest {
  std::string list_path;   // nvliblist.conf or rocmliblist.conf
  std::string cache_path;  // the ld.so cache
  std::string host_path;   // the host's PATH, for the programs
  std::string dev_dir;     // the host's /dev (CAPSA_DEV_DIR in tests)
  bool contain = false;    // /dev is a tmpfs: bind the devices one by one
};

struct DriverPlan {
  std::vector<MountStep> steps;
  std::vector<std::string> warnings;  // one line each
  std::size_t libraries = 0;          // how many library steps
  std::size_t programs = 0;           // how many program steps
};

// The binds of `list`'s libraries, programs and files. An unreadable cache is one
// warning (`flag` names the option in it) and no libraries.
DriverPlan plan_driver_files(const DriverFileList& list, const std::string& cache_path, const std::string& host_path,
                             const std::string& flag);

// A host file bound read-only; optional (gone between planning and mounting: skipped).
MountStep read_only_file(std::string source, std::string target);

// The request for this host: `list_path`, CAPSA_LDSO_CACHE, PATH, CAPSA_DEV_DIR.
DriverRequest host_driver_request(std::string list_path, bool contain);

}  // namespace capsa::runtime::gpu
