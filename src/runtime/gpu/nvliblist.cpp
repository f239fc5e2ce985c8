#include "runtime/gpu/nvliblist.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace capsa::runtime::gpu {
namespace {

std::string trim(const std::string& s) {
  const char* space = " \t\r\n";
  auto begin = s.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

}  // namespace

DriverFileList parse_driver_file_list(const std::string& text) {
  DriverFileList list;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::string entry = trim(line.substr(0, line.find('#')));
    if (entry.empty()) continue;
    if (entry.find(".so") != std::string::npos) list.libraries.push_back(entry);
    else if (entry[0] == '/') list.files.push_back(entry);
    else list.binaries.push_back(entry);
  }
  return list;
}

std::string driver_file_list_path(const std::string& name, const char* variable) {
  if (const char* forced = std::getenv(variable); forced && *forced) return forced;
  std::vector<std::string> candidates = config_candidates(name);
  // A build tree has no etc/capsa: the shipped list in the source tree.
  candidates.push_back(std::string(CAPSA_SOURCE_DIR) + "/etc/" + name);
  if (std::string path = first_readable(candidates); !path.empty()) return path;
  throw Error(name + " not found (looked in " + candidates.front() + " and " + candidates[1] +
              "); reinstall capsa or set " + variable);
}

}  // namespace capsa::runtime::gpu
