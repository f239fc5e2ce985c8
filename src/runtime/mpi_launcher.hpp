#pragma once
// MPI ranks in containers (docs/mpi-and-slurm.md): the launcher on the host (srun, mpirun,
// mpiexec) and the MPI library in the image meet through a process-management interface,
// PMIx or PMI-2, whose endpoint the launcher passes in the environment. Two things follow
// for a rank's container: the PMIx server's directory must be visible in it, and the
// image's MPI must speak the launcher's interface. When it cannot, every rank either
// aborts in MPI_Init or believes it is "rank 0 of 1" — a hang or a wrong result far from
// the cause. capsa cannot see the job, but it can compare two facts before the command
// starts: what the environment says the launcher offers, and which MPI and PMI libraries
// the image's ld.so cache lists. A mismatch it is sure of becomes a warning with a hint; anything
// else (no MPI library in the image, a statically linked MPI) stays silent.
#include <optional>
#include <string>
#include <vector>

#include "runtime/environment.hpp"
#include "runtime/mount_plan.hpp"

namespace capsa::runtime {

// What started this process, from its environment.
struct Launcher {
  bool pmix = false;        // PMIX_NAMESPACE and PMIX_RANK: a PMIx server (srun --mpi=pmix, Open MPI's mpirun)
  bool pmi2 = false;        // PMI_FD: a PMI-1/PMI-2 wire server (srun --mpi=pmi2, MPICH's Hydra)
  bool open_mpi = false;    // OMPI_COMM_WORLD_SIZE: Open MPI's mpirun/orted
  std::string name;         // for messages: "srun --mpi=pmix", "Open MPI's mpirun", ...
  bool any() const { return pmix || pmi2; }
};
Launcher detect_launcher(const EnvMap& env);

// The PMIx server's directory (PMIX_SERVER_TMPDIR: under srun, in the slurmd spool) at
// the same path: the client maps the server's shared-memory datastore from there, and
// without it every rank prints "PMIX ERROR ... gds_ds12_lock" and falls back to asking
// the server. Optional (skipped when missing); nothing when no PMIx launcher is seen.
std::vector<MountStep> launcher_mounts(const Launcher& launcher, const EnvMap& env);

// The MPI-related libraries an image's ld.so cache lists (sonames).
struct ImageMpi {
  std::vector<std::string> open_mpi;  // libmpi.so.N beside libopen-pal.so.N (Open MPI)
  std::vector<std::string> mpich;     // libmpich.so.N, or libmpi.so.N without libopen-pal (MPICH,
                                      // Intel MPI, MVAPICH, Cray MPICH)
  std::vector<std::string> pmix;      // libpmix.so.N
  std::vector<std::string> pmi;       // libpmi2.so.N, libpmi.so.N (Slurm's or MPICH's PMI clients)
  bool any_mpi() const { return !open_mpi.empty() || !mpich.empty(); }
};
ImageMpi image_mpi_from_sonames(const std::vector<std::string>& sonames);

// A one-paragraph warning naming the mismatch and pointing at the documentation, or
// nothing when capsa cannot tell that the image's MPI will fail under this launcher.
std::optional<std::string> pmi_mismatch(const Launcher& launcher, const ImageMpi& image);

// --cleanenv/--containall would drop the launcher's variables: the warning, if it does.
std::optional<std::string> cleanenv_drops_launcher(const Launcher& launcher, bool clean);

}  // namespace capsa::runtime
