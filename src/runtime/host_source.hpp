#pragma once
// A bind's host source, examined once: whether it exists, whether it is a directory, and
// an O_PATH descriptor of it. The bind is made from that descriptor (/proc/self/fd/N), so
// the path is looked up once and nothing can put something else there between the check
// and the mount.
#include <string>
#include <vector>

#include "runtime/mount_plan.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

class HostSource {
 public:
  // No source (a tmpfs, a generated file), or one that does not exist.
  HostSource() = default;
  // Looks `path` up, following symlinks as the bind will. Any failure (missing, not
  // reachable) means absent, as for stat(2).
  static HostSource examine(const std::string& path);
  // A source examined in another mount namespace, where its descriptor cannot be bound
  // from (mount(2) refuses a source outside the caller's namespace): bound by its path.
  static HostSource examined_elsewhere(bool directory);

  bool exists() const { return exists_; }
  bool directory() const { return directory_; }
  // What mount(2) is given as the source: /proc/self/fd/N, or `path` without a descriptor.
  std::string mount_source(const std::string& path) const;

 private:
  UniqueFd fd_;
  bool exists_ = false;
  bool directory_ = false;
};

// Bind and RecursiveBind steps examined (others get an empty HostSource), in step order.
std::vector<HostSource> examine_sources(const std::vector<MountStep>& steps);

}  // namespace capsa::runtime
