#pragma once
// The lists of driver files `--nv` and `--rocm` bring in (etc/nvliblist.conf,
// etc/rocmliblist.conf: the same entries as Apptainer's; docs/gpu.md).
#include <string>
#include <vector>

namespace capsa::runtime::gpu {

struct DriverFileList {
  std::vector<std::string> binaries;   // names looked up on the host PATH
  std::vector<std::string> libraries;  // prefixes matched against ld.so cache names
  std::vector<std::string> files;      // absolute paths bound at the same path
};

// One entry a line, '#' comments: ".so" in it = library, leading '/' = file, else binary.
DriverFileList parse_driver_file_list(const std::string& text);

// $variable (CAPSA_NVLIBLIST...), else <prefix>/etc/capsa/<name> next to the running
// binary, else the configured sysconfdir, else the source tree (running from the build folder).
std::string driver_file_list_path(const std::string& name, const char* variable);

}  // namespace capsa::runtime::gpu
