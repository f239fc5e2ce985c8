#pragma once
// What a container or a pull may leave behind on the host, read from /proc and /sys, for
// the fault, load and privilege suites. Each returns what it found (empty: nothing), so
// that a failing assertion shows the leftover itself.
#include <sys/types.h>

#include <string>
#include <vector>

#include "support/temp_dir.hpp"

namespace capsa::test {

// "PID: mountinfo line" for every mount that names `dir` (its mount point, source or
// options lie at or below it), in the mount namespace of any process this one may
// inspect. capsa mounts a container's session tmpfs on $CAPSA_SESSION_DIR and builds the
// container's overlay from directories in it (`lowerdir=SESSION/points:SESSION/image`),
// in the container's own namespace: a test that gives each container a private session
// directory sees here every container of its own that is still set up, whichever
// namespace it is in, and after pivot_root too (when the session itself is out of the
// container's sight, its overlay still names it).
std::vector<std::string> mounts_naming(const std::string& dir);

// /dev/loopN of every loop device whose backing file is `file` (the kernel's
// /sys/block/loopN/loop/backing_file; what `losetup -j FILE` reports).
std::vector<std::string> loop_devices_backed_by(const std::string& file);

// "PID: command line" of every process (but this one) whose command line contains
// `needle`: the FUSE server names the image it serves.
std::vector<std::string> processes_with_argument(const std::string& needle);

// "PID: command line" of every process (but this one) whose environment contains
// `needle` (readable for one's own processes, or all of them as root): capsa and
// everything it starts inherit a marker variable the test sets.
std::vector<std::string> processes_with_environment(const std::string& needle);

// The targets of the open descriptors of `pid` (readlink of /proc/PID/fd/N), "N -> TARGET".
std::vector<std::string> open_descriptors(pid_t pid);

// Peak resident set size (VmHWM) of `pid` in KiB, 0 when unreadable.
long peak_rss_kib(pid_t pid);

// The cgroup directories named in `names` (capsa-PID: what capsa makes for a container
// with limits) that still exist, in any hierarchy mounted below /sys/fs/cgroup.
std::vector<std::string> cgroups_named(const std::vector<std::string>& names);

// Joins lines for an assertion message.
std::string joined(const std::vector<std::string>& lines);

// Containers of a private copy of the busybox fixture, run with a private session
// directory (CAPSA_SESSION_DIR) and a marker variable that capsa and everything it starts
// inherit: what they leave is the test's own, never that of suites running at the same
// time. A fixture class derives from it and passes the image's file name and the marker's
// variable name.
class PrivateContainers {
 public:
  PrivateContainers(const std::string& image_name, const std::string& marker_variable);

  TempDir work;
  const std::string image;    // work/<image_name>, a copy of real/busybox_amd64.sif
  const std::string session;  // work/session
  const std::string marker;   // "<marker_variable>=<work>"
  // The cgroups its containers were seen in (capsa-PID, read inside them): leftovers too.
  std::vector<std::string> cgroup_names;

  // What a live container of `image_file` holds: mounts under the session directory or
  // naming the image, a loop device (root) or a FUSE server (anyone else) on it, and
  // any process carrying the marker.
  std::vector<std::string> leftovers(const std::string& image_file) const;
  std::vector<std::string> leftovers() const { return leftovers(image); }
  // A gtest failure listing the leftovers, unless they are gone within a while (the
  // kernel tears a dead namespace down asynchronously).
  void expect_nothing_left(const std::string& image_file) const;
  void expect_nothing_left() const { expect_nothing_left(image); }
};

}  // namespace capsa::test
