#pragma once
// A program started in the background, to be killed or signalled while it works, and
// polling with a bound, so that a broken capsa fails a test instead of hanging the suite.
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace capsa::test {

class Background {
 public:
  // Runs argv (PATH search) with stdout to /dev/null and stderr to `err_file`.
  // `own_group`: the child leads a new process group, so signal_group() reaches every
  // process it starts (as Slurm or a shell's job control would).
  Background(const std::vector<std::string>& argv, const std::string& err_file, bool own_group = false);
  ~Background();  // SIGKILL (to the group, when it has one) and reaped
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signal_number);
  void signal_group(int signal_number);
  // Exit code and signal as run_process reports them; stderr in `err`.
  ProcessResult wait();
  // True once the process has ended (it is reaped then; wait() still reports it).
  bool finished();

 private:
  pid_t pid_ = -1;
  bool own_group_ = false;
  bool reaped_ = false;
  int status_ = 0;
  std::string err_file_;
};

// Polls `condition` every 5 ms for at most `seconds`.
bool eventually(const std::function<bool()>& condition, int seconds = 60);

}  // namespace capsa::test
