#pragma once
// Reading the container's command ahead while capsa builds the container's root.
//
// Why: an exec faults its program's pages in as 128 KiB reads, one after another; through
// capsa's FUSE server that is ten round trips for busybox, a third of an unprivileged
// start. Told to read the file ahead (posix_fadvise WILLNEED, one read-ahead window per
// call) from a thread of its own once the image is mounted, the kernel sends those reads
// at once, the server's threads answer them while the root is being built, and the exec
// finds the pages cached. The thread is not waited for unless a later step needs capsa
// to have one (the exec ends it): in a gzip image its own reads of the program's headers
// take milliseconds. The program's ELF interpreter (ld.so) is read ahead too. Only what
// the exec would look up itself is read: the command as given when it is a path, else
// its first match on PATH (the container's PATH before the image's scripts change it),
// at most kReadAheadLimit bytes of each file, and only the first 128 KiB (the headers)
// when the machine has no CPU to spare (cpus_to_spare below).
#include <string>
#include <thread>

namespace capsa::runtime {

// How much of each file is read ahead.
enum class ReadAhead {
  Whole,        // all of it (at most kReadAheadLimit)
  Headers,      // the first 128 KiB, which every exec reads
  AsCpusAllow,  // Whole when cpus_to_spare, else Headers
};

// Whether a machine whose /proc/loadavg reads `loadavg` has CPUs to spare, capsa being
// allowed `cpus` of them, for reading more of a program than its exec touches (busybox's
// /bin/true: six of its nine blocks): no more runnable tasks (loadavg's fourth field)
// than four per CPU, since one start brings up to five of its own (capsa, the reading
// thread, the FUSE server's). One start at a time on 2 CPUs sees 2 to 6; 32 started at
// once see 40 to 70, and there each block unpacked for nothing is taken from the
// containers starting (32 at once took 8-14% longer when each read all of busybox).
// False when `loadavg` cannot be read.
bool cpus_to_spare(const std::string& loadavg, int cpus);

class CommandPrefetch {
 public:
  CommandPrefetch() = default;
  // Starts reading `command` ahead inside the image mounted at `image_root`, found on
  // `path` (':'-separated) when it names no directory. Starts nothing when `command` is
  // empty.
  static CommandPrefetch start(const std::string& image_root, const std::string& command, const std::string& path,
                               ReadAhead how = ReadAhead::AsCpusAllow);
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
