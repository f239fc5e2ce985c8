#pragma once
// Reading the container's command ahead while capsa builds the container's root.
//
// Why: an exec faults its program's pages in as 128 KiB reads, one after another; through
// capsa's FUSE server that is ten round trips for busybox, a third of an unprivileged
// start. Told to read the file ahead (posix_fadvise WILLNEED) from a thread of its own
// once the image is mounted, the kernel sends those reads at once, the server's threads
// answer them while the root is being built, and the exec finds the pages cached. The
// thread is not waited for unless a later step needs capsa to have one (the exec ends
// it): in a gzip image its own reads of the program's headers take milliseconds. The
// program's ELF interpreter (ld.so) is read ahead too. Only what the exec would look up
// itself is read: the command as given when it is a path, else its first match on PATH
// (the container's PATH before the image's scripts change it), at most
// kReadAheadLimit bytes of each file.
#include <string>
#include <thread>

namespace capsa::runtime {

class CommandPrefetch {
 public:
  CommandPrefetch() = default;
  // Starts reading `command` ahead inside the image mounted at `image_root`, found on
  // `path` (':'-separated) when it names no directory. Starts nothing when `command` is
  // empty.
  static CommandPrefetch start(const std::string& image_root, const std::string& command, const std::string& path);
  CommandPrefetch(CommandPrefetch&&) = default;
  CommandPrefetch& operator=(CommandPrefetch&&) = delete;
  ~CommandPrefetch() { finish(); }
  // Waits for the thread to have asked for every file (the reads go on in the kernel).
  void finish() {
    if (thread_.joinable()) thread_.join();
  }
  // Lets the thread go on until the exec, which ends it: its descriptors are
  // close-on-exec, and the reads it asked for go on in the kernel.
  void leave_to_exec() {
    if (thread_.joinable()) thread_.detach();
  }

 private:
  std::thread thread_;
};

}  // namespace capsa::runtime
