#include "cli/forward.hpp"

#include "cli/global_flags.hpp"

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
  static constexpr std::array<std::string_view, 6> actions = {"exec", "run", "shell", "test", "run-help", "instance"};
  const std::size_t first = global_flag_words(args);
  if (first >= args.size()) return "";
  const std::string& command = args[first];
  // `instance save` writes an image: capsa-full's (cmd_instance_save.cpp).
  if (command == "instance" && first + 1 < args.size() && args[first + 1] == "save") return "";
  return std::find(actions.begin(), actions.end(), command) != actions.end() ? command : "";
}

void forward_to_full() {
  std::string path = full_binary();
  ::execv(path.c_str(), remembered);
  std::fprintf(stderr, "capsa: error: cannot run %s: %s (reinstall capsa)\n", path.c_str(), std::strerror(errno));
  std::fflush(stderr);
  ::_exit(127);
}

}  // namespace capsa::cli
