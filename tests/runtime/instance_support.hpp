#pragma once
// Shared by the instance suites: an image whose start script leaves traces, the caller's
// instance store, and a guard that stops a test's instances whatever happens.
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::instance_testing {

// dir/NAME.sif: busybox, a start script that writes "started ARGS" to /tmp/started (a
// private /tmp with --contain), one line to stdout and one to stderr, then runs `tail`
// (`sleep 1000` as a process `ps` shows); a runscript that writes "ran ARGS" to /tmp/ran
// and, when its first argument is "serve", runs `sleep 1000` too.
std::string make_instance_image(const test::TempDir& dir, const std::string& name = "service");

// `capsa ARGS...` (through run_support's capsa()).
test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// A name no other test (or concurrent run) uses: PREFIX-PID-COUNTER.
std::string unique_name(const std::string& prefix);

// The caller's record directory and log directory (instance_state.hpp's layout).
std::string record_directory();
std::string log_directory();

// Whether a process `pid` exists (not a zombie).
bool process_alive(int pid);

// Live processes whose command line names `text` (any user the caller may see).
int processes_naming(const std::string& text);

// Stops the instances matching `pattern` when it goes.
class StopOnExit {
 public:
  explicit StopOnExit(std::string pattern) : pattern_(std::move(pattern)) {}
  ~StopOnExit();
  StopOnExit(const StopOnExit&) = delete;
  StopOnExit& operator=(const StopOnExit&) = delete;

 private:
  std::string pattern_;
};

}  // namespace capsa::instance_testing
