#include "spank/pmix_dir.hpp"

#include <fstream>
#include <iterator>
#include <sstream>

namespace capsa::spank {

std::string pmix_dir_in_maps(const std::string& maps, const std::string& job, const std::string& step) {
  const std::string needle = "/pmix." + job + "." + step + "/";
  std::istringstream in(maps);
  for (std::string line; std::getline(in, line);) {
    const auto path = line.find(" /");  // the path is the last field, and absolute
    const auto at = line.find(needle);
    if (path == std::string::npos || at == std::string::npos || at < path) continue;
    return line.substr(path + 1, at + needle.size() - 1 - (path + 1));
  }
  return "";
}

std::string pmix_server_dir(const std::string& job, const std::string& step) {
  std::ifstream in("/proc/self/maps");
  const std::string maps{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return pmix_dir_in_maps(maps, job, step);
}

}  // namespace capsa::spank
