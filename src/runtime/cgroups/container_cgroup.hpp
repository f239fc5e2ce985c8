#pragma once
// The container's own cgroup, for the limit flags (--memory, --cpus, --pids-limit...) and
// --apply-cgroups. On cgroup v2 root makes it at the top of the hierarchy (as Apptainer's
// cgroupfs manager does), anyone else beside their own cgroup, in the subtree delegated to
// them (systemd's Delegate=yes, or a cgroup an administrator chowned to them); on hosts
// whose controllers are on cgroup v1 hierarchies, below the caller's cgroup in each.
// A process outside it removes it once the container has ended and it is empty, so that
// nothing is left behind; capsa itself execs the container's command.
#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/cgroups/cgroup_limits.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

class ContainerCgroup {
 public:
  // Creates the cgroup and writes `limits`, then starts the process that removes it.
  // Throws Error in one line (nothing left made) when the host has no usable controller
  // or, unprivileged, no cgroup delegated to the caller; call before any namespace is
  // entered.
  static ContainerCgroup create(const CgroupLimits& limits);

  // Moves the calling process, and so all it starts from now on, into the cgroup; the
  // descriptors were opened by create(), so this works in the container's namespaces.
  void join() const;

  // The directories made, e.g. /sys/fs/cgroup/capsa-1234 (one per v1 hierarchy).
  const std::vector<std::string>& directories() const { return directories_; }

 private:
  std::vector<std::string> directories_;
  std::vector<UniqueFd> procs_;  // cgroup.procs of each, open for writing
};

// Moves the calling process into the cgroups capsa made for the container whose process
// is `pid` (an instance's init), if it has any: a command joining an instance is held to
// the instance's limits, as in Apptainer.
void join_cgroups_of(pid_t pid);

// The name of the cgroups capsa makes: "capsa-" then the container's process id.
inline constexpr const char* kCgroupPrefix = "capsa-";

}  // namespace capsa::runtime
