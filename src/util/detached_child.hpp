#pragma once
// A process that serves this one's successor — a FUSE server for the container that this
// process is about to become with exec — without being its child.
//
// A child forked here stays a child of the container's command after the exec, and some
// commands wait for every child they have before they end (busybox tar does): they would
// wait for their own file system's server forever. So the server is started two forks
// away: a watcher process, reparented at once to init (or the nearest subreaper), forks
// the server as its own child, and watches both this process (through a pidfd; polling
// on kernels before 5.3) and the server. When this process — by then the command — has
// ended, the watcher exits, and the server gets its parent-death signal as it would have
// from the command (SIGTERM lets fuse2fs write back). When the server ends first, the
// watcher passes its wait status on and exits.
#include <functional>
#include <optional>

#include "util/fd.hpp"
#include "util/process.hpp"

namespace capsa {

class EndWatch;

class DetachedChild {
 public:
  // Runs `body` (returning its exit status) in the server process; `options` apply to it
  // (its parent-death signal comes from the watcher). Returns once the server exists.
  static DetachedChild start(const std::function<int()>& body, const ChildOptions& options);

  // The same, for a caller that needs neither the server's pid nor how it ended, and
  // has work of its own meanwhile: returns as soon as the first fork has, with the
  // process that forks the watcher. The caller reaps it (wait()) before it execs, or the
  // command inherits it as a zombie child; destroying it unreaped kills it, and the
  // server may then never start.
  static Process start_unreported(const std::function<int()>& body, const ChildOptions& options);

  // For a server that watches this process itself: `body` gets the watch and must end
  // once it tells this process has ended. There is no watcher, so the server exists one
  // fork sooner: the process returned forks it and ends at once (the server is an
  // orphan from birth, with no parent-death signal), and the caller reaps that process
  // before it execs, as with start_unreported.
  static Process start_watching_itself(const std::function<int(const EndWatch&)>& body, const char* name);

  pid_t pid() const { return pid_; }
  // How the server ended, if it has (never blocks).
  std::optional<ExitStatus> ended();

 private:
  DetachedChild(pid_t pid, UniqueFd reports) : pid_(pid), reports_(std::move(reports)) {}

  pid_t pid_;
  UniqueFd reports_;  // the watcher writes the server's wait status here when it ends
};

// Tells when this process has ended, to a process that is not its parent and may be in
// another PID namespace: a pidfd, or on kernels before 5.3 a descriptor of its /proc
// directory, polled (a zombie counts as ended: its parent may wait on a pipe that the
// watcher holds). Made before forking the watcher, which inherits it.
class EndWatch {
 public:
  static EndWatch of_this_process();
  // Of another process, alive now (e.g. a peer blocked on a socket); the caller checks
  // that `pid` names the process it means.
  static EndWatch of(pid_t pid);
  // Whether the process has ended (never blocks).
  bool ended() const;
  // Returns once it has.
  void await() const;
  // Readable once it has ended; -1 on kernels before 5.3.
  int poll_fd() const { return pidfd_ ? pidfd_.get() : -1; }
  // The descriptor it keeps, whichever it is (a process closing its others keeps it).
  int descriptor() const { return pidfd_ ? pidfd_.get() : proc_dir_.get(); }

 private:
  UniqueFd pidfd_;
  UniqueFd proc_dir_;
};

}  // namespace capsa
