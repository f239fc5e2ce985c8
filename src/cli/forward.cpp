#include "cli/forward.hpp"

#include "util/install_layout.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace capsa::cli {
namespace {

char** remembered = nullptr;

// Beside this binary, in its prefix's libexec/capsa, else where it was configured to go.
std::string full_binary() {
  std::vector<std::string> candidates = libexec_candidates("capsa-full");
  for (const std::string& path : candidates)
    if (::access(path.c_str(), X_OK) == 0) return path;
  return candidates.back();
}

}  // namespace

void remember_arguments(char** argv) { remembered = argv; }

std::string local_action(const std::vector<std::string>& args) {
  static constexpr std::array<std::string_view, 5> actions = {"exec", "run", "shell", "test", "run-help"};
  for (const std::string& arg : args) {
    if (arg == "-q" || arg == "--quiet") continue;  // capsa's global flags that may come first
    return std::find(actions.begin(), actions.end(), arg) != actions.end() ? arg : "";
  }
  return "";
}

void forward_to_full() {
  std::string path = full_binary();
  ::execv(path.c_str(), remembered);
  std::fprintf(stderr, "capsa: error: cannot run %s: %s (reinstall capsa)\n", path.c_str(), std::strerror(errno));
  std::fflush(stderr);
  ::_exit(127);
}

}  // namespace capsa::cli
