#pragma once
// Opening a path inside a directory tree as a process chrooted there would: for a
// container's root before it is entered, and for reading an image's sandbox directory
// (image/directory_files) without following its links out to the host.
#include <string>

namespace capsa {

// Opens `path` (absolute, inside the tree) relative to `root_fd`, following symlinks as
// the container would: an absolute link restarts at root_fd, ".." stops at it. -1 with
// errno when a component is missing. `final_flags` O_PATH returns an O_PATH fd.
int open_in_root(int root_fd, const std::string& path, int final_flags);

// The same walk done component by component in user space: what open_in_root falls back
// to on kernels without openat2 (before 5.6). Exposed so that tests compare the two.
int open_in_root_walk(int root_fd, const std::string& path, int final_flags);

}  // namespace capsa
