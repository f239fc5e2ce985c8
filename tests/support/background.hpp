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
  // Runs argv (PATH search) with stdout to `out_file` (/dev/null when empty) and stderr
  // to `err_file`. `own_group`: the child leads a new process group, so signal_group()
  // reaches every process it starts (as Slurm or a shell's job control would).
  Background(const std::vector<std::string>& argv, const std::string& err_file, bool own_group = false,
             const std::string& out_file = "");
  ~Background();  // SIGKILL (to the group, when it has one) and reaped
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int signal_number);
  void signal_group(int signal_number);
  // Exit code and signal as run_process reports them; stderr in `err`, and stdout in
  // `out` when it went to a file.
  ProcessResult wait();
  // True once the process has ended (it is reaped then; wait() still reports it).
  bool finished();
  // Peak resident set size of the process (ru_maxrss, KiB), once it was reaped.
  long max_rss_kib() const { return max_rss_kib_; }

 private:
  pid_t pid_ = -1;
  bool own_group_ = false;
  bool reaped_ = false;
  int status_ = 0;
  long max_rss_kib_ = 0;
  std::string err_file_;
  std::string out_file_;
};

// Polls `condition` every 5 ms for at most `seconds`.
bool eventually(const std::function<bool()>& condition, int seconds = 60);

}  // namespace capsa::test
