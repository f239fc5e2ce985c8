#pragma once
// The lock files that root's containers on one node share, in /run/capsa: a tmpfs on
// every distribution, so they go at boot with the loop devices and mounts they guard.
// Each has a fixed name and is never removed: a lock file removed while others hold it
// open would split the next ones from them.
#include <string>

#include "util/fd.hpp"

namespace capsa::runtime {

// /run/capsa/`name` opened read-write (created 0600 with the directory when missing),
// not locked yet. Empty when it cannot be had (no /run: a minimal chroot).
UniqueFd open_node_lock(const std::string& name);

}  // namespace capsa::runtime
