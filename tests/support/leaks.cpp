#include "support/leaks.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support/background.hpp"
#include "support/test_env.hpp"

namespace capsa::test {
namespace {

namespace fs = std::filesystem;

std::vector<pid_t> other_processes() {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid != ::getpid()) pids.push_back(pid);
  }
  return pids;
}

std::string read_proc(pid_t pid, const char* what) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + what, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

std::string printable_cmdline(pid_t pid) {
  std::string args = read_proc(pid, "cmdline");
  for (char& c : args)
    if (c == '\0') c = ' ';
  return std::to_string(pid) + ": " + args;
}

// mountinfo escapes space, tab, newline and backslash in paths as octal.
std::string unescape(const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out += static_cast<char>(std::strtol(field.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

std::string canonical_or_same(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) ? std::string(resolved) : path;
}

}  // namespace

std::vector<std::string> mounts_naming(const std::string& dir) {
  const std::string root = canonical_or_same(dir);
  std::vector<std::string> found;
  std::set<std::string> namespaces_seen;
  for (pid_t pid : other_processes()) {
    // One look per mount namespace is enough (and keeps this fast on a busy machine).
    std::error_code ec;
    std::string ns = fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/mnt", ec).string();
    if (!ns.empty() && !namespaces_seen.insert(ns).second) continue;
    std::istringstream lines(read_proc(pid, "mountinfo"));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string id, parent, device, mount_root, mount_point;
      fields >> id >> parent >> device >> mount_root >> mount_point;
      mount_point = unescape(mount_point);
      bool names_it = mount_point == root || mount_point.starts_with(root + "/") ||
                      unescape(line).find(root + "/") != std::string::npos || unescape(line).ends_with(root);
      if (names_it) found.push_back(std::to_string(pid) + ": " + line);
    }
  }
  return found;
}

std::vector<std::string> loop_devices_backed_by(const std::string& file) {
  const std::string wanted = canonical_or_same(file);
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("loop")) continue;
    std::ifstream in(entry.path() / "loop" / "backing_file");
    std::string backing;
    if (!std::getline(in, backing)) continue;  // not configured
    if (backing == wanted || backing == file) found.push_back("/dev/" + name);
  }
  return found;
}

std::vector<std::string> processes_with_argument(const std::string& needle) {
  std::vector<std::string> found;
  for (pid_t pid : other_processes())
    if (read_proc(pid, "cmdline").find(needle) != std::string::npos) found.push_back(printable_cmdline(pid));
  return found;
}

std::vector<std::string> processes_with_environment(const std::string& needle) {
  std::vector<std::string> found;
  for (pid_t pid : other_processes())
    if (read_proc(pid, "environ").find(needle) != std::string::npos) found.push_back(printable_cmdline(pid));
  return found;
}

std::vector<std::string> open_descriptors(pid_t pid) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    std::string target = fs::read_symlink(entry.path(), link_ec).string();
    found.push_back(entry.path().filename().string() + " -> " + target);
  }
  return found;
}

long peak_rss_kib(pid_t pid) {
  std::istringstream lines(read_proc(pid, "status"));
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("VmHWM:")) return std::strtol(line.c_str() + 6, nullptr, 10);
  return 0;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

std::vector<std::string> cgroups_named(const std::vector<std::string>& names) {
  std::vector<std::string> found;
  if (names.empty()) return found;
  std::error_code error;
  auto options = fs::directory_options::skip_permission_denied;
  for (fs::recursive_directory_iterator it("/sys/fs/cgroup", options, error), end; !error && it != end;
       it.increment(error)) {
    if (it.depth() > 8) it.disable_recursion_pending();
    if (!it->is_directory(error) || it->is_symlink(error)) continue;
    const std::string name = it->path().filename().string();
    if (std::find(names.begin(), names.end(), name) != names.end()) found.push_back(it->path().string());
  }
  return found;
}

PrivateContainers::PrivateContainers(const std::string& image_name, const std::string& marker_variable)
    : image(work / image_name), session(work / "session"), marker(marker_variable + "=" + work.path()) {
  fs::create_directories(session);
  fs::copy_file(sif_fixture("real/busybox_amd64.sif"), image);
}

std::vector<std::string> PrivateContainers::leftovers(const std::string& image_file) const {
  std::vector<std::string> found = mounts_naming(session);
  for (const auto& mount : mounts_naming(image_file)) found.push_back(mount);
  for (const auto& loop : loop_devices_backed_by(image_file)) found.push_back("loop device " + loop);
  for (const auto& process : processes_with_argument(image_file)) found.push_back("process " + process);
  for (const auto& process : processes_with_environment(marker)) found.push_back("process " + process);
  for (const auto& cgroup : cgroups_named(cgroup_names)) found.push_back("cgroup " + cgroup);
  return found;
}

void PrivateContainers::expect_nothing_left(const std::string& image_file) const {
  EXPECT_TRUE(eventually([&] { return leftovers(image_file).empty(); }, 30)) << joined(leftovers(image_file));
}

}  // namespace capsa::test
