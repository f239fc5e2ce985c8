#include "cli/forward.hpp"

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

// Beside this binary (a build tree, or a bin/ holding both), else where `make install`
// puts it.
std::string full_binary() {
  std::array<char, 4096> self{};
  ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n > 0) {
    std::string path(self.data(), static_cast<std::size_t>(n));
    std::string beside = path.substr(0, path.rfind('/') + 1) + "capsa-full";
    if (::access(beside.c_str(), X_OK) == 0) return beside;
  }
  return CAPSA_LIBEXECDIR "/capsa/capsa-full";
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
