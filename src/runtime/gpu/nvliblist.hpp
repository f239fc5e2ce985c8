#pragma once
// The list of NVIDIA driver files `--nv` brings in (etc/nvliblist.conf, the same entries
// as Apptainer's; docs/gpu.md).
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

// CAPSA_NVLIBLIST, else <prefix>/etc/capsa/nvliblist.conf next to the running binary,
// else the configured sysconfdir, else the source tree (running from the build folder).
std::string driver_file_list_path();

}  // namespace capsa::runtime::gpu
