#pragma once
// One writer or any number of readers per overlay, across every container on the node:
// a writable overlay mounted twice (two ext3 mounts of one image, two overlayfs over one
// upper directory) corrupts it. The lock is flock(2) on the image file or directory
// (exclusive to write, shared to read), taken before anything is checked or mounted and
// held for the container's life by a small holder process that dies with the container
// (parent-death signal) and by the FUSE server of the image, which inherits it, so it is
// never released while a server may still write. A refused container names the holder,
// found in /proc/locks.
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace capsa::runtime {

class OverlayLock {
 public:
  // Takes the lock without waiting; throws Error naming `path` and the process that holds
  // it when another container has it in a conflicting way.
  static OverlayLock take(const std::string& path, bool writable);
  // The locked descriptor (close-on-exec): a FUSE server started for the image keeps a
  // copy of it across its exec, and with it the lock.
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
};

// Starts the process that holds `locks` until this process (the container's command, once
// it execs) ends; it is no child of this process. None when there are no locks.
void hold_for_container(const std::vector<OverlayLock>& locks);

}  // namespace capsa::runtime
