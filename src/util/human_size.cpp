#include "util/human_size.hpp"

#include <cmath>

namespace capsa {

std::string human_size(std::int64_t bytes) {
  if (bytes > -1024 && bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr char units[] = "KMGTPE";
  std::uint64_t divisor = 1024;
  int exponent = 0;
  for (std::int64_t n = bytes / 1024; n <= -1024 || n >= 1024; n /= 1024) {
    divisor *= 1024;
    ++exponent;
  }
  // Round half away from zero, like Go's math.Round.
  double value = std::round(static_cast<double>(bytes) / static_cast<double>(divisor));
  return std::to_string(static_cast<long long>(value)) + " " + units[exponent] + "iB";
}

}  // namespace capsa
