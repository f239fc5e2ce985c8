#pragma once
// Runs a `capsa` command for the job's user from inside slurmstepd or slurmd, which run
// as root (or, in slurm_spank_user_init, as root with the user's effective ids): the
// child takes the user's real, effective and saved ids before exec, so that capsa sees
// the user it works for, and none of slurmstepd's descriptors, signal mask or ignored
// signals. Its stdout and stderr are captured.
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace capsa::spank {

struct UserCommand {
  std::vector<std::string> argv;  // argv[0] is an absolute path
  std::vector<std::string> env;   // NAME=VALUE, the whole environment
  uid_t uid = 0;
  gid_t gid = 0;
};

// The most of a command's output read into slurmstepd (1 MiB): its tail, after a line
// that says how much was cut.
constexpr std::size_t kOutputLimit = std::size_t{1} << 20;

struct UserCommandResult {
  int exit_code = -1;  // -1: killed by a signal, or not started
  std::string output;  // stdout and stderr, interleaved; the last kOutputLimit bytes
};

UserCommandResult run_as_user(const UserCommand& command);

// The last non-empty line of `output` (capsa's error is the last thing it prints), or
// `fallback` when there is none.
std::string last_line(const std::string& output, const std::string& fallback);

// Replaces or adds NAME=VALUE in `env`.
void set_variable(std::vector<std::string>& env, const std::string& name, const std::string& value);

}  // namespace capsa::spank
