#pragma once
// Text reports of a SIF file, in the exact format of the reference tool (siftool /
// `apptainer sif`), so that scripts written against either read capsa's output.

#include <string>

#include "sif/image.hpp"

namespace capsa::sif {

std::string header_report(const Image& image);
std::string list_report(const Image& image);
std::string info_report(const Descriptor& d);

// "2021-08-02 19:09:36 +0000 UTC", the way Go prints a UTC time.
std::string format_utc(std::int64_t unix_seconds);

}  // namespace capsa::sif
