#pragma once
// The processes that keep an instance alive (`capsa instance start`):
//
//   monitor (host PID namespace; in the container's user and mount namespaces)
//     |  holds the FUSE server and the overlay locks as any container does; reports the
//     |  init's pid to the starting capsa; ends the instance when its Slurm step ends;
//     |  removes the instance's record when it ends; exits as the init did
//     +- init (PID 1 of the instance's PID namespace)
//          |  lives on after the start script ends (an instance without one only waits
//          |  for `exec instance://`); reaps orphans; a stop signal is passed to every
//          |  process of the namespace, and init exits once none is left
//          +- the start script (or runscript), then whatever it starts
//
// The init is the instance's pid (`instance list`): its namespaces are what `exec
// instance://` joins. When it ends the kernel kills what is left in the namespace; the
// monitor follows, and with it the FUSE server, so the mount namespace and every mount
// in it go. The monitor has a parent-death link to nothing: it is the root of the
// instance, started in a session of its own.
#include <string>

namespace capsa::runtime {

struct InstanceSupervision {
  int status_fd = -1;      // the starting capsa's pipe: "ready PID\n" once the instance can be joined
  int job_fd = -1;         // pidfd of the Slurm step's slurmstepd, -1 outside a job (instance_job.hpp)
  int record_dir_fd = -1;  // the store's app directory (the monitor no longer sees the host's tree)
  std::string name;        // the instance's name: its record is NAME.json there
  const char* job_kind = "Slurm job step";  // what job_fd watches, as the log names it
  // A kept image (kept_image.hpp): there is no start script, and the monitor stops the
  // instance when no process but its own has been in its mount namespace for `linger_ms`.
  // A container joining it holds the name's lock (shared) from finding the record until
  // it is in the namespace; the monitor ends only with the lock held exclusively.
  int kept_lock_fd = -1;
  int linger_ms = 0;
  bool kept() const { return kept_lock_fd >= 0; }
};

// Called from launch (through PrivateNamespaces::instance) inside the container's root,
// with one thread. Returns only in the start script's process; the monitor and the init
// never return.
void enter_instance_pid_namespace(InstanceSupervision& supervision);

// The wrapper around launch() in the forked instance process: an error before the
// instance is ready goes to the starting capsa as "error MESSAGE\n" (its stderr is the
// instance's log by then).
void report_instance_failure(const InstanceSupervision& supervision, const std::string& message);

}  // namespace capsa::runtime
