#pragma once
// What the MPI suites (mpi_test: mpirun and Slurm; gridengine_test: Grid Engine) share:
// the image, the variables users set for Open MPI in containers, and reading mpi_app's
// per-rank lines.
#include <map>
#include <set>
#include <string>
#include <vector>

namespace capsa::mpi {

// The SIF the mpi.image test made (CAPSA_TEST_MPI_SIF).
std::string mpi_sif();

// The variables a user sets for Open MPI in containers (docs/mpi-and-slurm.md): as root,
// the allow-run-as-root pair; unprivileged, no cross-memory attach between the ranks' user
// namespaces.
std::vector<std::string> mpi_environment();

// "mpi_app: rank R of N on HOST: ok" lines of a world of `size`: rank -> host.
std::map<int, std::string> ok_ranks(const std::string& out, int size);

std::set<std::string> hosts_of(const std::map<int, std::string>& ranks);

}  // namespace capsa::mpi
