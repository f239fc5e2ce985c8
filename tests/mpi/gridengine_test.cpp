// Grid Engine for real: the job scripts of the cluster guides that use it (ABCI, TSUBAME),
// submitted with `qsub -sync y` to a private cell of Debian's Grid Engine
// (tests/gridengine/start.sh: queue capsa.q, parallel environment mpi), with capsa under
// the name job scripts use, `singularity`. Open MPI reads the allocation from
// $PE_HOSTFILE itself; each rank is one container. Root and the test user, who submit
// alike (the jobs run as whoever submitted them).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "mpi_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::mpi {
namespace {

using test::ProcessResult;
using test::run_process;
namespace fs = std::filesystem;

class GridEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(mpi_sif())) << mpi_sif() << " (made by the mpi.image test)";
    const char* env = std::getenv("CAPSA_TEST_SGE_ENV");
    ASSERT_TRUE(env != nullptr && fs::exists(env)) << "CAPSA_TEST_SGE_ENV: run through ctest (gridengine.start)";
    sge_env = env;
    // `singularity` in a folder the job puts first on its PATH, as `module load singularity`
    // does at a site (the job's shell is a login shell, which sets PATH afresh).
    fs::create_directories(work / "bin");
    fs::create_symlink(test::capsa_binary(), work / "bin/singularity");
    // The job runs as the submitter; its output goes into the working directory.
    ::chmod(work.path().c_str(), 0755);
  }

  // Submits SCRIPT (written to the working directory as job.sh) and waits for it; returns
  // qsub's result (the job's exit code) with the job's output in `out`.
  ProcessResult submit(const std::string& script) {
    work.write("job.sh", script);
    std::string submit = ". '" + sge_env + "' && cd '" + work.path() + "' && qsub -sync y job.sh";
    std::vector<std::string> argv = {"env", "SIF=" + mpi_sif(), "WORK=" + work.path()};
    for (const auto& var : mpi_environment()) argv.push_back(var);
    argv.insert(argv.end(), {"sh", "-c", submit});
    auto submitted = run_process(argv, "", 300);
    submitted.out = fs::exists(work / "job.out") ? test::read_file(work / "job.out") : "(no job output)\n" + submitted.out;
    return submitted;
  }

  test::TempDir work;
  std::string sge_env;
};

// The lines every job script here starts with: a name, 4 slots of the mpi parallel
// environment, the submitter's environment, one output file in the working directory;
// then what a site's `module load singularity` would do.
const std::string job_header =
    "#!/bin/sh\n"
    "#$ -N capsa-mpi\n"
    "#$ -pe mpi 4\n"
    "#$ -V\n"
    "#$ -cwd\n"
    "#$ -j y\n"
    "#$ -o job.out\n"
    "export PATH=\"$WORK/bin:$PATH\"\n";

TEST_F(GridEngine, MpirunOfSingularityExecInAJobScript) {
  auto job = submit(job_header + "mpirun -np \"$NSLOTS\" singularity exec \"$SIF\" /usr/local/bin/mpi_app --size \"$NSLOTS\"\n");
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  auto ranks = ok_ranks(job.out, 4);
  EXPECT_EQ(ranks.size(), 4u) << job.out;
}

TEST_F(GridEngine, MpiexecPerNodeThroughAWrapperScript) {
  // The ChainerMN/ABCI pattern: ranks per node from the allocation, LD_LIBRARY_PATH
  // exported to every rank with -x, and a wrapper (the guides' $HOME/run.sh; here in the
  // job's working directory) that calls `singularity exec`.
  work.write("run.sh",
             "#!/bin/sh\n"
             "echo \"run.sh: rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE, LD_LIBRARY_PATH=$LD_LIBRARY_PATH\"\n"
             "exec singularity exec \"$SIF\" \"$@\"\n");
  ::chmod((work / "run.sh").c_str(), 0755);
  auto job = submit(job_header +
                    "NP=$NSLOTS\n"
                    "PPN=$((NSLOTS / NHOSTS))\n"
                    "export LD_LIBRARY_PATH=/opt/site/lib\n"
                    "mpiexec -npernode \"$PPN\" -n \"$NP\" -x LD_LIBRARY_PATH \"$WORK/run.sh\" "
                    "/usr/local/bin/mpi_app --size \"$NP\"\n");
  EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  EXPECT_EQ(ok_ranks(job.out, 4).size(), 4u) << job.out;
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_NE(job.out.find("run.sh: rank " + std::to_string(rank) + " of 4, LD_LIBRARY_PATH=/opt/site/lib\n"),
              std::string::npos)
        << job.out;
}

TEST_F(GridEngine, AFailingRankFailsTheJob) {
  // The rank fails inside the container (only the image has mpi_app); mpirun ends with
  // its code, and qsub -sync y with the job's.
  auto job = submit(job_header + "mpirun -np 2 singularity exec \"$SIF\" sh -c 'test -x /usr/local/bin/mpi_app && exit 3'\n");
  EXPECT_EQ(job.exit_code, 3) << job.out;
}

}  // namespace
}  // namespace capsa::mpi
