#pragma once
#include <cstdint>
#include <string>

namespace capsa {

// "847 B", "27 KiB", "742 KiB": powers of 1024, rounded to the nearest unit, as siftool
// prints sizes (so that `capsa sif header` matches it line for line).
std::string human_size(std::int64_t bytes);

}  // namespace capsa
