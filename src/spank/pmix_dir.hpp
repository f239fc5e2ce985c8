#pragma once
// The PMIx server's directory of a step (PMIX_SERVER_TMPDIR, SlurmdSpoolDir/pmix.JOB.STEP),
// which the step's container must see at the same path: the PMIx clients of the ranks
// map the server's shared-memory datastore from there (without it, every rank prints
// "PMIX ERROR" and falls back to asking the server). Slurm sets the variable only in each
// task's environment, after the instance has started in user_init; but by then the server
// in slurmstepd has created the datastore and mapped its files, so the directory is read
// from slurmstepd's own memory map. Empty when the step does not use PMIx.
#include <string>

namespace capsa::spank {

// From the text of /proc/PID/maps: the directory ".../pmix.JOB.STEP" a mapped file lies in.
std::string pmix_dir_in_maps(const std::string& maps, const std::string& job, const std::string& step);

// The same, from this process's map (called in slurmstepd).
std::string pmix_server_dir(const std::string& job, const std::string& step);

}  // namespace capsa::spank
