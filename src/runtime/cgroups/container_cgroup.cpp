#include "runtime/cgroups/container_cgroup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "util/detached_child.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

constexpr const char* kDelegationHelp =
    "rootless cgroups require a systemd user session with cgroup delegation (Delegate=yes), or a cgroup the "
    "administrator made yours";

// A mounted cgroup hierarchy: v2 (the unified one) or a v1 one with its controllers.
struct Hierarchy {
  std::string mount_point;
  std::string root;  // the cgroup shown at the mount point (mountinfo's root field)
  bool v2 = false;
  std::set<std::string> controllers;  // v1 only
};

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, by);) out.push_back(item);
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<Hierarchy> mounted_hierarchies() {
  std::vector<Hierarchy> out;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    // ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const std::vector<std::string> fields = split(line.substr(0, dash), ' ');
    const std::vector<std::string> tail = split(line.substr(dash + 3), ' ');
    if (fields.size() < 5 || tail.size() < 3) continue;
    Hierarchy h{fields[4], fields[3], tail[0] == "cgroup2", {}};
    if (tail[0] == "cgroup") {
      for (const std::string& option : split(tail[2], ','))
        if (option != "rw" && option != "ro" && !option.starts_with("name=") && option.find('=') == std::string::npos)
          h.controllers.insert(option);
    } else if (tail[0] != "cgroup2") {
      continue;
    }
    out.push_back(h);
  }
  return out;
}

// The caller's cgroup in the hierarchy of `controller` ("" for v2), from /proc/self/cgroup.
std::string own_cgroup(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string names = line.substr(first + 1, second - first - 1);
    bool match = controller.empty() && line.compare(0, first, "0") == 0 && names.empty();
    if (!controller.empty())
      for (const std::string& n : split(names, ','))
        if (n == controller) match = true;
    if (match) return line.substr(second + 1);
  }
  return "/";
}

// The directory of cgroup `path` under `h`'s mount point.
std::string directory_of(const Hierarchy& h, std::string path) {
  if (h.root != "/" && path.starts_with(h.root)) path = path.substr(h.root.size());
  if (path == "/") path.clear();
  return h.mount_point + path;
}

std::string parent_of(const std::string& dir) { return dir.substr(0, dir.rfind('/')); }

void write_file(const std::string& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || ::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    throw_errno("writing " + value + " to " + path);
}

// One setting into the cgroup at `dir`, with the kernel's refusal said in one line.
void apply(const std::string& dir, const CgroupSetting& s) {
  std::string file = s.file, value = s.value;
  if (!s.alternative_file.empty() && ::access((dir + "/" + file).c_str(), F_OK) != 0) {
    file = s.alternative_file;
    value = s.alternative_value;
  }
  const std::string path = dir + "/" + file;
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd && errno == ENOENT)
    throw Error("cgroup limits: this kernel has no " + file + " (for " + value + ") in " + dir);
  if (!fd || ::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
    throw Error("cgroup limits: the kernel refused " + value + " for " + path + ": " + std::strerror(errno));
}

bool is_writable(const std::string& path) { return ::access(path.c_str(), W_OK) == 0; }

void require_writable(const std::string& flag_help, const std::vector<std::string>& paths) {
  for (const std::string& path : paths)
    if (!is_writable(path))
      throw Error(std::string("cgroup limits: ").append(path).append(" is not writable for you: ").append(flag_help));
}

// Waits until the cgroup at `dir` holds no process, then removes it (retrying while the
// kernel still counts an exiting one).
void remove_when_empty(const std::string& dir) {
  for (int busy = 0;;) {
    std::string procs = read_text(dir + "/cgroup.procs");
    if (procs.find_first_not_of(" \n") == std::string::npos) {
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
      if (errno != EBUSY || ++busy > 600) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

ContainerCgroup ContainerCgroup::create(const CgroupLimits& limits) {
  const bool root = ::geteuid() == 0;
  const std::string name = kCgroupPrefix + std::to_string(::getpid());
  const std::vector<Hierarchy> hierarchies = mounted_hierarchies();
  const Hierarchy* unified = nullptr;
  for (const Hierarchy& h : hierarchies)
    if (h.v2 && unified == nullptr) unified = &h;
  // v2 where the unified hierarchy has the controllers (a unified host), or, on a hybrid
  // host, whose cgroup2 mount holds only the controllers no v1 hierarchy took (often
  // hugetlb alone), where it has every one these limits need; else the v1 hierarchies.
  std::vector<CgroupSetting> settings;
  std::string v2_parent;
  if (unified != nullptr) {
    const std::string top = read_text(unified->mount_point + "/cgroup.controllers");
    std::set<std::string> available;
    for (const std::string& c : split(top.substr(0, top.find('\n')), ' ')) available.insert(c);
    const bool unified_host =
        available.count("memory") != 0 || available.count("pids") != 0 || available.count("cpu") != 0;
    std::vector<CgroupSetting> wanted = cgroup_v2_settings(limits);
    const bool all_in_v2 = !wanted.empty() && std::all_of(wanted.begin(), wanted.end(), [&](const CgroupSetting& s) {
      return available.count(s.controller) != 0;
    });
    if (unified_host || all_in_v2) {
      settings = std::move(wanted);
      const std::string own = directory_of(*unified, own_cgroup(""));
      // Beside the caller's own cgroup, for root too: a container of a Slurm job's root
      // task stays inside the job's cgroup and its limits, not at the top of the tree.
      v2_parent = own == unified->mount_point ? unified->mount_point : parent_of(own);
      const std::string here = read_text(v2_parent + "/cgroup.controllers");
      available.clear();
      for (const std::string& c : split(here.substr(0, here.find('\n')), ' ')) available.insert(c);
      for (const CgroupSetting& s : settings)
        if (available.count(s.controller) == 0)
          throw Error("cgroup limits: the " + s.controller + " controller (for " + s.file + ") is not available in " +
                      v2_parent + (root ? "" : std::string(" (") + kDelegationHelp + ")"));
    }
  }
  ContainerCgroup cgroup;
  auto undo = [&cgroup] {
    for (std::size_t i = cgroup.directories_.size(); i-- > 0;) ::rmdir(cgroup.directories_[i].c_str());
  };
  try {
    if (!v2_parent.empty()) {
      if (limits.disable_oom_killer)  // as runc: cgroup v2 has no switch for it
        log::warning("--oom-kill-disable is ignored: cgroup v2 cannot disable the OOM killer");
      if (!root)
        require_writable(kDelegationHelp,
                         {v2_parent, v2_parent + "/cgroup.procs", v2_parent + "/cgroup.subtree_control"});
      std::set<std::string> enabled;
      for (const std::string& c : split(read_text(v2_parent + "/cgroup.subtree_control"), ' '))
        enabled.insert(c.substr(0, c.find('\n')));
      for (const CgroupSetting& s : settings) {
        if (enabled.count(s.controller) != 0) continue;
        try {
          write_file(v2_parent + "/cgroup.subtree_control", "+" + s.controller);
        } catch (const SystemError& e) {
          throw Error("cannot enable the " + s.controller + " controller for the cgroups below " + v2_parent + ": " +
                      strerror(e.errno_value()) +
                      (e.errno_value() == EBUSY
                           ? " (processes of its own are in it; a delegated cgroup keeps them in leaves below it)"
                           : ""));
        }
        enabled.insert(s.controller);
      }
      const std::string dir = v2_parent + "/" + name;
      if (::mkdir(dir.c_str(), 0755) != 0) throw_errno("making the container's cgroup " + dir);
      cgroup.directories_.push_back(dir);
      for (const CgroupSetting& s : settings) apply(dir, s);
      cgroup.procs_.push_back(open_file(dir + "/cgroup.procs", O_WRONLY | O_CLOEXEC));
    } else {
      settings = cgroup_v1_settings(limits);
      std::set<std::string> made;  // mount points: co-mounted controllers share one
      for (const CgroupSetting& s : settings) {
        const Hierarchy* h = nullptr;
        for (const Hierarchy& candidate : hierarchies)
          if (!candidate.v2 && candidate.controllers.count(s.controller) != 0) h = &candidate;
        if (h == nullptr)
          throw Error("cgroup limits: this host has no " + s.controller + " controller mounted (for " + s.file + ")");
        const std::string parent = directory_of(*h, own_cgroup(s.controller));
        const std::string dir = std::string(parent).append("/").append(name);
        if (made.insert(h->mount_point).second) {
          if (!root) require_writable(kDelegationHelp, {parent});
          if (::mkdir(dir.c_str(), 0755) != 0) throw_errno("making the container's cgroup " + dir);
          cgroup.directories_.push_back(dir);
          // A v1 cpuset cgroup starts with no CPU and no memory node: the parent's, unless set.
          if (h->controllers.count("cpuset") != 0)
            for (const char* file : {"cpuset.cpus", "cpuset.mems"})
              if (std::none_of(settings.begin(), settings.end(),
                               [&](const CgroupSetting& x) { return x.file == file; }))
                write_file(dir + "/" + file, read_text(parent + "/" + file));
          cgroup.procs_.push_back(open_file(dir + "/cgroup.procs", O_WRONLY | O_CLOEXEC));
        }
        apply(dir, s);
      }
    }
  } catch (...) {
    cgroup.procs_.clear();
    undo();
    throw;
  }
  if (settings.empty()) return cgroup;
  // The remover: outside the cgroup (started before join), holding nothing of the caller's.
  const EndWatch container = EndWatch::of_this_process();
  const std::vector<std::string> dirs = cgroup.directories_;
  try {
    DetachedChild::start(
        [&container, &dirs] {
          ::setsid();
          const int keep = container.descriptor();
          if (int null_fd = ::open("/dev/null", O_RDWR); null_fd >= 0) {
            ::dup2(null_fd, STDIN_FILENO);
            ::dup2(null_fd, STDOUT_FILENO);
            ::dup2(null_fd, STDERR_FILENO);
          }
          if (keep > 3) ::syscall(SYS_close_range, 3U, static_cast<unsigned>(keep - 1), 0U);
          ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0U, 0U);
          container.await();
          for (std::size_t i = dirs.size(); i-- > 0;) remove_when_empty(dirs[i]);  // deepest first
          return 0;
        },
        {.name = "the remover of the container's cgroup"});
  } catch (...) {
    cgroup.procs_.clear();
    undo();
    throw;
  }
  log::debug("container cgroup: " + dirs.front());
  return cgroup;
}

void ContainerCgroup::join() const {
  for (std::size_t i = 0; i < procs_.size(); ++i)
    if (::write(procs_[i].get(), "0", 1) != 1) throw_errno("moving the container into its cgroup " + directories_[i]);
}

void join_cgroups_of(pid_t pid) {
  const std::string table = read_text("/proc/" + std::to_string(pid) + "/cgroup");
  // Read when a line names a cgroup of capsa's: most instances (every kept image) have
  // none, and parsing the mount table is a good part of a join's time.
  std::optional<std::vector<Hierarchy>> mounted;
  for (const std::string& line : split(table, '\n')) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string path = line.substr(second + 1);
    if (path.substr(path.rfind('/') + 1).rfind(kCgroupPrefix, 0) != 0) continue;
    if (!mounted) mounted = mounted_hierarchies();
    const std::vector<Hierarchy>& hierarchies = *mounted;
    const std::string names = line.substr(first + 1, second - first - 1);
    for (const Hierarchy& h : hierarchies) {
      bool match = names.empty() ? h.v2 : false;
      for (const std::string& n : split(names, ','))
        if (!h.v2 && h.controllers.count(n) != 0) match = true;
      if (match) {
        write_file(directory_of(h, path) + "/cgroup.procs", std::to_string(::getpid()));
        break;
      }
    }
  }
}

}  // namespace capsa::runtime
