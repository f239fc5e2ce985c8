#include "util/install_layout.hpp"

#include <unistd.h>

#include <climits>

namespace capsa {
namespace {

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string running_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string relocated_prefix(const std::string& executable) {
  std::string dir = parent_of(executable);
  std::string prefix;
  if (ends_with(dir, "/bin"))
    prefix = parent_of(dir);
  else if (ends_with(dir, "/libexec/capsa"))
    prefix = parent_of(parent_of(dir));
  // A binary in /bin has prefix "/", which no install uses: the configured paths decide.
  return prefix == "/" ? "" : prefix;
}

std::vector<std::string> libexec_candidates(const std::string& name) {
  std::vector<std::string> candidates;
  std::string self = running_executable();
  if (!self.empty()) candidates.push_back(parent_of(self) + "/" + name);
  if (std::string prefix = relocated_prefix(self); !prefix.empty())
    candidates.push_back(prefix + "/libexec/capsa/" + name);
  candidates.push_back(std::string(CAPSA_LIBEXECDIR) + "/capsa/" + name);
  return candidates;
}

std::string prefix_sysconfdir(const std::string& prefix) { return prefix == "/usr" ? "/etc" : prefix + "/etc"; }

std::vector<std::string> config_candidates(const std::string& name) {
  std::vector<std::string> candidates;
  if (std::string prefix = relocated_prefix(running_executable()); !prefix.empty())
    candidates.push_back(prefix_sysconfdir(prefix) + "/capsa/" + name);
  candidates.push_back(std::string(CAPSA_SYSCONFDIR) + "/capsa/" + name);
  return candidates;
}

std::string first_readable(const std::vector<std::string>& candidates) {
  for (const std::string& path : candidates)
    if (::access(path.c_str(), R_OK) == 0) return path;
  return "";
}

}  // namespace capsa
