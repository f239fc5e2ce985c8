#pragma once
// Turning a path recorded in a layer into the components of a path inside the image.
// Nothing here touches the host filesystem: layers are applied to an in-memory tree,
// so a hostile path can at worst be dropped, never resolved against the host.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capsa::convert {

// Squashfs stores names of at most 256 bytes; Linux refuses paths of PATH_MAX or more.
inline constexpr std::size_t kMaxNameBytes = 256;
inline constexpr std::size_t kMaxPathBytes = 4095;

struct SplitPath {
  std::vector<std::string> components;  // empty: the image root
  std::string error;                    // non-empty: the path is rejected, and why
};

// Drops a leading "/" and "./", empty and "." components (tar writers emit "./etc",
// "/etc" and "etc//x" for the same path). ".." is rejected rather than resolved: no
// legitimate layer needs it, and resolving it lexically would let "a/../../b" name
// something the writer did not intend (Charliecloud rejects it too).
SplitPath split_entry_path(std::string_view path);

std::string join_components(const std::vector<std::string>& components);

}  // namespace capsa::convert
