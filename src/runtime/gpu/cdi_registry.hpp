#pragma once
// `--device VENDOR/CLASS=NAME`: the CDI spec files of the spec directories (--cdi-dirs;
// default /etc/cdi, then /var/run/cdi, which wins for a device both define, as in the
// reference library's cache) and the edits the asked devices bring, in order.
#include <string>
#include <vector>

#include "runtime/gpu/cdi_spec.hpp"

namespace capsa::runtime::gpu {

// One set of edits to apply, and where it comes from for messages:
// "nvidia.com/gpu=0 (/etc/cdi/nvidia.yaml)", or the spec's common edits:
// "nvidia.com/gpu (/etc/cdi/nvidia.yaml)".
struct CdiSelection {
  std::string origin;
  CdiEdits edits;
};

std::vector<std::string> default_cdi_dirs();

// The edits of `names` (each VENDOR/CLASS=NAME, or VENDOR/CLASS=all for every device of a
// kind whose spec defines no device "all"): each spec's common edits once, before its first
// device. Throws Error, one line, for a bad name, an unknown kind or device, a device two
// files of one directory define, and a broken spec file of a kind asked for (or whose kind
// cannot be read) when the device is not found elsewhere; a broken file of a kind asked
// for is otherwise a warning, and of other kinds nothing.
std::vector<CdiSelection> resolve_cdi_devices(const std::vector<std::string>& names,
                                              const std::vector<std::string>& dirs, std::vector<std::string>& warnings);

}  // namespace capsa::runtime::gpu
