#pragma once
// Instances end with the Slurm job step that started them. The step's slurmstepd is
// found among the starting capsa's ancestors and watched through a pidfd: it exits when
// the step ends for any reason (the batch script returns, scancel, the time limit, a
// drained node), and the kernel wakes the instance's monitor at once. That costs nothing
// while the job runs — no polling of slurmctld (64 instances each asking `scontrol show
// job` every few seconds would load the controller for every node of a cluster), no
// dependence on the proctrack plugin (proctrack/linuxproc and pgid do not find a
// process that left the step's process tree, as an instance does).
#include <string>

#include "util/fd.hpp"

namespace capsa::runtime {

struct SlurmStep {
  std::string job_id;   // SLURM_JOB_ID
  std::string step_id;  // SLURM_STEP_ID, or "batch" in a batch script
  UniqueFd stepd;       // pidfd of the slurmstepd ancestor; invalid when none was found
  pid_t stepd_pid = -1;
};

// The step this process runs in, from SLURM_JOB_ID and the process's ancestors; an empty
// job_id outside a job.
SlurmStep current_slurm_step();

}  // namespace capsa::runtime
