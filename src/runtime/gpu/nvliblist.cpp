#include "runtime/gpu/nvliblist.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <sstream>

#include "util/error.hpp"

namespace capsa::runtime::gpu {
namespace {

std::string trim(const std::string& s) {
  const char* space = " \t\r\n";
  auto begin = s.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(space) - begin + 1);
}

bool readable(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

std::string executable_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string exe(buf, static_cast<std::size_t>(n));
  return exe.substr(0, exe.find_last_of('/'));
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

std::string driver_file_list_path() {
  if (const char* forced = std::getenv("CAPSA_NVLIBLIST"); forced && *forced) return forced;
  std::vector<std::string> candidates;
  if (std::string dir = executable_dir(); !dir.empty()) candidates.push_back(dir + "/../etc/capsa/nvliblist.conf");
  candidates.push_back(std::string(CAPSA_SYSCONFDIR) + "/capsa/nvliblist.conf");
  candidates.push_back(std::string(CAPSA_SOURCE_DIR) + "/etc/nvliblist.conf");
  for (const std::string& path : candidates)
    if (readable(path)) return path;
  throw Error("nvliblist.conf not found (looked in " + candidates.front() + " and " + CAPSA_SYSCONFDIR +
              "/capsa); reinstall capsa or set CAPSA_NVLIBLIST");
}

}  // namespace capsa::runtime::gpu
