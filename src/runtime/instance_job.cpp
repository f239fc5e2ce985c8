#include "runtime/instance_job.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace capsa::runtime {
namespace {

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The command name and parent of `pid` from /proc/PID/stat; false when it is gone.
bool name_and_parent(pid_t pid, std::string& name, pid_t& parent) {
  const std::string stat = text_of("/proc/" + std::to_string(pid) + "/stat");
  const auto open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 > stat.size()) return false;
  name = stat.substr(open + 1, close - open - 1);
  parent = static_cast<pid_t>(std::atol(stat.c_str() + close + 4));  // ") S PPID"
  return true;
}

}  // namespace

SlurmStep current_slurm_step() {
  SlurmStep step;
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job == nullptr || *job == '\0') return step;
  step.job_id = job;
  const char* id = std::getenv("SLURM_STEP_ID");
  step.step_id = id != nullptr && *id != '\0' ? id : "batch";
  std::string name;
  pid_t parent = 0;
  for (pid_t pid = ::getppid(); pid > 1 && name_and_parent(pid, name, parent); pid = parent) {
    if (name != "slurmstepd") continue;
    step.stepd.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (step.stepd) step.stepd_pid = pid;
    break;
  }
  return step;
}

}  // namespace capsa::runtime
