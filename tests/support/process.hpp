#pragma once
// Runs a program (no shell) and collects what it printed and how it ended.
#include <string>
#include <vector>

namespace capsa::test {

struct ProcessResult {
  int exit_code = -1;   // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// `stdin_data` is written to the child's standard input. The child is killed after
// `timeout_seconds`, so a hang fails the test instead of stalling the suite.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdin_data = "",
                          int timeout_seconds = 120);

}  // namespace capsa::test
