#pragma once
// Child processes that own themselves: a Process kills and reaps its child when it goes
// (return, exception, early exit of the owner's scope), so no caller keeps a pid and
// writes its own waitpid loop. Waiting retries EINTR here and nowhere else. Running a
// program (exec, pipes) is in util/run_program.hpp.
//
// A forked child shares nothing with its parent but memory copies and open fds; the
// owners of the parent's resources are copied too, and must not act in the child. So a
// child started with start() never returns into the caller's code, and the Process that
// fork() returns in the child owns nothing.
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <exception>

namespace capsa {

// How a child ended, from its wait(2) status.
class ExitStatus {
 public:
  ExitStatus() = default;
  explicit ExitStatus(int wait_status) : status_(wait_status) {}

  bool exited() const;
  int exit_code() const;  // exited() only
  bool signaled() const;
  int signal() const;  // signaled() only
  bool success() const { return exited() && exit_code() == 0; }
  // As a shell (and Apptainer) reports it: the exit code, or 128 + the signal.
  int code() const;
  int wait_status() const { return status_; }

 private:
  int status_ = 0;
};

struct ChildOptions {
  // Sent to the child when the thread that started it ends (PR_SET_PDEATHSIG). A parent
  // that died before the child could ask for it is noticed, and the child exits as the
  // signal would have ended it (128 + signal)...
  int parent_death_signal = 0;
  // ...unless this is false: the first child in a new PID namespace sees 0 as its
  // parent's pid, so there is nothing to compare (and the check would cost two system
  // calls on the container's start).
  bool check_parent_alive = true;
  // What the owner sends a child still running when it goes: SIGKILL, or a signal the
  // child may clean up on (SIGTERM) followed by SIGKILL when `stop_grace` has passed.
  int stop_signal = SIGKILL;
  std::chrono::milliseconds stop_grace{0};
  // What the child is, for the message when it cannot be started ("starting NAME: ...").
  const char* name = "a child process";
};

class Process {
 public:
  Process() = default;  // owns nothing
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;  // stops the child it owned first
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() { stop(); }

  // fork(2) with an owner; returns twice. In the parent: the child. In the child: a
  // Process that owns nothing and says in_child(); the caller's code carries on there
  // (it must end with exec or _exit, or return to code that does). Standard I/O is
  // flushed first, so nothing buffered is written twice. Throws SystemError.
  static Process fork(const ChildOptions& options = {});

  // Forks a child that runs `body` (returning its exit status) and then _exits: the
  // child never returns into the caller's code. An exception escaping body is printed
  // as "capsa: error: ..." and the child exits 1.
  template <typename Body>
  static Process start(Body&& body, const ChildOptions& options = {}) {
    Process child = fork(options);
    if (child.in_child()) {
      int status = 1;
      try {
        status = body();
      } catch (const std::exception& e) {
        report_child_failure(e.what());
      } catch (...) {
        report_child_failure("unknown error");
      }
      exit_child(status);
    }
    return child;
  }

  // Takes ownership of a child started otherwise (clone with namespace flags, say).
  static Process adopt(pid_t pid, const ChildOptions& options = {});

  // Owns a child that has not been reaped yet.
  explicit operator bool() const { return pid_ > 0; }
  // This is the child's side of fork().
  bool in_child() const { return in_child_; }
  // For the kernel (a /proc path, newuidmap): the child's pid, -1 when none is owned.
  pid_t pid() const { return pid_; }

  // Waits for the child to end and reaps it; again after that, the same status.
  ExitStatus wait();
  // Sends `signal_number` to a child not reaped yet (nothing otherwise).
  void signal(int signal_number) const;
  // What the destructor does: the stop signal, the grace, SIGKILL, reaped. Returns how
  // the child ended; a child already reaped is not signalled again.
  ExitStatus stop() noexcept;
  // Gives the child up: it is no longer signalled or reaped by this object (it lives on
  // to its parent-death signal, and whoever inherits it reaps it).
  void release() { pid_ = -1; }

  // What an init does for its one child: waits for it while reaping every other child
  // of this process (orphans in a PID namespace, a server that ended), and passes on to
  // it every signal of `signals` that a process sent (kill(2): SI_USER, SI_QUEUE,
  // SI_TKILL); the terminal's and the kernel's are not passed on, the child gets those
  // itself. `signals` must hold SIGCHLD, and the caller blocks them all beforehand (they
  // are taken with sigwaitinfo).
  ExitStatus supervise(const sigset_t& signals);

  // In a child: flushes standard I/O and _exits with `status`.
  [[noreturn]] static void exit_child(int status);
  // In a child: "capsa: error: WHAT" on stderr.
  static void report_child_failure(const char* what);

 private:
  Process(pid_t pid, const ChildOptions& options);
  void reaped(int wait_status);

  pid_t pid_ = -1;
  bool in_child_ = false;
  int stop_signal_ = SIGKILL;
  std::chrono::milliseconds stop_grace_{0};
  ExitStatus status_;
};

// Ends this process the way `status` says a child ended: the same exit code, or the same
// signal (default action restored and unblocked; no second core dump). For a process
// that stands in for its child (an init, capsa waiting for its container).
[[noreturn]] void exit_like(const ExitStatus& status);

}  // namespace capsa
