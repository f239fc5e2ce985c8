// MPI ranks in containers, the "hybrid model" of every cluster guide, for real: Debian's
// Open MPI 4.1 mpirun on the host and Debian's Slurm 22.05 (a private cluster of logical
// nodes started by tests/slurm/start.sh) start one `capsa exec` per rank; the image
// (tests/fixtures/make-mpi-image.sh) carries the same Open MPI and mpi_app
// (tests/mpi/mpi_app.c), which checks its rank against the launcher's, the world size,
// an MPI_Allreduce and an MPI_Allgather, and exits 3 on any mismatch.
//
// The suite runs as root and as the unprivileged test user (mpi.root, mpi.user): as root,
// Open MPI wants its allow-run-as-root variables; unprivileged, each rank has its own
// user namespace, so the ranks of a node cannot use cross-memory attach (CMA) and Open
// MPI's shared-memory transport is told to copy through the segment instead
// (btl_vader_single_copy_mechanism=none). Under srun the PMIx interface is used
// (MpiDefault=pmix: Debian's Open MPI speaks PMIx only); capsa binds the PMIx server's
// directory in the slurmd spool, so no PMIX_MCA_gds workaround is set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "mpi_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::mpi {
namespace {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

// NAME=VALUE variables one test adds (a type of its own, so that a command list cannot be
// passed in its place).
struct ExtraEnv {
  std::vector<std::string> vars;
};

// Runs `argv` with the MPI variables and `extra` added to this process's environment.
ProcessResult run_with_mpi_env(std::vector<std::string> argv, const ExtraEnv& extra = {}, int timeout_seconds = 300) {
  std::vector<std::string> full = {"env"};
  for (const auto& e : mpi_environment()) full.push_back(e);
  full.insert(full.end(), extra.vars.begin(), extra.vars.end());
  full.insert(full.end(), argv.begin(), argv.end());
  return run_process(full, "", timeout_seconds);
}

std::vector<std::string> mpirun(int ranks, const std::string& btl) {
  return {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--mca", "btl", btl};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(mpi_sif())) << mpi_sif() << " (made by the mpi.image test)";
    // The ranks start in the working directory, which must exist for them too.
    ASSERT_EQ(::chdir(work.path().c_str()), 0);
  }
  void TearDown() override { ASSERT_EQ(::chdir("/"), 0); }
  std::vector<std::string> capsa_exec() { return {test::capsa_binary(), "exec", mpi_sif()}; }
  TempDir work;
};

// --- host mpirun, one container per rank -------------------------------------------------

class Mpirun : public Mpi, public ::testing::WithParamInterface<std::string> {};

TEST_P(Mpirun, FourRanksInContainersFindEachOther) {
  const std::string btl = GetParam();
  auto result = run_with_mpi_env(concat(concat(mpirun(4, btl), capsa_exec()),
                                        {"/usr/local/bin/mpi_app", "--size", "4", "--require-env",
                                         "OMPI_COMM_WORLD_RANK,OMPI_COMM_WORLD_SIZE,PMIX_RANK,PMIX_NAMESPACE"}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(ok_ranks(result.out, 4).size(), 4u) << result.out << result.err;
}

INSTANTIATE_TEST_SUITE_P(Transports, Mpirun, ::testing::Values("self,vader", "self,tcp"),
                         [](const auto& info) { return info.param == "self,vader" ? "SharedMemory" : "Tcp"; });

TEST_F(Mpi, MpirunFailsWithTheExitCodeOfAFailingRank) {
  auto result = run_with_mpi_env(concat(concat(mpirun(4, "self,vader"), capsa_exec()),
                                        {"/usr/local/bin/mpi_app", "--size", "4", "--fail-rank", "2:42"}));
  EXPECT_EQ(result.exit_code, 42) << result.out << result.err;
  EXPECT_NE(result.err.find("rank 2 exits with 42"), std::string::npos) << result.err;
}

// --- Slurm -----------------------------------------------------------------------------

std::vector<std::string> srun(const std::string& nodes, int tasks) {
  return {"srun", "--nodes=" + nodes, "--ntasks=" + std::to_string(tasks), "--overcommit"};
}

TEST_F(Mpi, SrunStartsFourRanksWithPmix) {
  // PMIx (srun --mpi=pmix, the cluster's MpiDefault): the only interface both Debian's
  // Slurm 22.05 and its Open MPI 4.1 speak. The launcher's variables must reach the rank
  // inside the container: mpi_app checks them there.
  std::string required = "SLURM_JOB_ID,SLURM_STEP_ID,SLURM_PROCID,SLURM_NTASKS,SLURM_MPI_TYPE,"
                         "PMIX_RANK,PMIX_NAMESPACE,PMIX_SERVER_URI41,PMIX_SERVER_TMPDIR";
  if (::geteuid() != 0) required += ",OMPI_MCA_btl_vader_single_copy_mechanism";
  auto result = run_with_mpi_env(concat(concat(concat(srun("1", 4), {"--mpi=pmix"}), capsa_exec()),
                                        {"/usr/local/bin/mpi_app", "--size", "4", "--require-env", required}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(ok_ranks(result.out, 4).size(), 4u) << result.out << result.err;
  // The server's shared-memory datastore is reachable: no PMIx client error, no fallback.
  EXPECT_EQ(result.err.find("PMIX ERROR"), std::string::npos) << result.err;
}

TEST_F(Mpi, SrunRanksSpanTwoLogicalNodes) {
  auto result = run_with_mpi_env(concat(concat(srun("2", 4), capsa_exec()), {"/usr/local/bin/mpi_app", "--size", "4"}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  auto ranks = ok_ranks(result.out, 4);
  EXPECT_EQ(ranks.size(), 4u) << result.out << result.err;
  EXPECT_EQ(hosts_of(ranks), (std::set<std::string>{"n1", "n2"})) << result.out;
}

TEST_F(Mpi, Pmi2VariablesReachTheContainer) {
  // srun --mpi=pmi2 hands each task a connected socket as PMI_FD: it must be set and
  // open inside (an unset PMI_FD would name /proc/self/fd/ itself, which exists).
  auto result = run_with_mpi_env(concat(concat(concat(srun("1", 2), {"--mpi=pmi2"}), capsa_exec()),
                                        {"/bin/sh", "-c", "[ -n \"$PMI_FD\" ] && [ -e /proc/self/fd/\"$PMI_FD\" ] && "
                                                          "echo \"pmi $PMI_RANK of $PMI_SIZE job $PMI_JOBID\""}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("pmi 0 of 2 job "), std::string::npos) << result.out << result.err;
  EXPECT_NE(result.out.find("pmi 1 of 2 job "), std::string::npos) << result.out << result.err;
}

TEST_F(Mpi, SrunFailsWithTheExitCodeOfAFailingRank) {
  auto result = run_with_mpi_env(
      concat(concat(srun("2", 4), capsa_exec()), {"/usr/local/bin/mpi_app", "--size", "4", "--fail-rank", "3:42"}));
  EXPECT_EQ(result.exit_code, 42) << result.out << result.err;
  EXPECT_NE(result.err.find("rank 3 exits with 42"), std::string::npos) << result.err;
}

// Submits a job script of `#SBATCH` lines and `body` with `sbatch --wait` and returns what
// its output file holds, after checking that the job succeeded and named its nodes.
std::string run_batch_job(const TempDir& work, const std::string& sbatch_lines, const std::string& body) {
  std::string script = "#!/bin/bash\n" + sbatch_lines + "#SBATCH --time=00:05:00\n#SBATCH --output=" +
                       (work / "capsa-mpi-%j.out") + "\n\nSIF=" + mpi_sif() + "\nCAPSA=" + test::capsa_binary() +
                       "\necho \"job $SLURM_JOB_ID on $SLURM_JOB_NODELIST: $SLURM_NTASKS tasks\"\n" + body;
  auto submitted = run_with_mpi_env({"sbatch", "--parsable", "--wait", work.write("job.sh", script)}, {}, 600);
  EXPECT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  std::string job = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
  std::string output_file = work / ("capsa-mpi-" + job + ".out");
  EXPECT_TRUE(std::filesystem::exists(output_file)) << output_file;
  std::string output = std::filesystem::exists(output_file) ? test::read_file(output_file) : "";
  EXPECT_NE(output.find("job " + job + " on n[1-2]: 4 tasks"), std::string::npos) << output;
  return output;
}

TEST_F(Mpi, SbatchJobScriptAsClusterGuidesWriteIt) {
  // The pattern of the guides: resources in #SBATCH lines, one `srun <runtime> run` line.
  std::string output = run_batch_job(work,
                                     "#SBATCH --job-name=capsa-mpi\n"
                                     "#SBATCH --nodes=2\n"
                                     "#SBATCH --ntasks=4\n"
                                     "#SBATCH --ntasks-per-node=2\n",
                                     "srun \"$CAPSA\" run \"$SIF\" --size \"$SLURM_NTASKS\"\n");
  auto ranks = ok_ranks(output, 4);
  EXPECT_EQ(ranks.size(), 4u) << output;
  EXPECT_EQ(hosts_of(ranks), (std::set<std::string>{"n1", "n2"})) << output;
}

TEST_F(Mpi, MpirunInsideAnSbatchAllocation) {
  // Apptainer's Slurm example: the host's mpirun inside the allocation starts its daemons
  // on every node through Slurm, and they start the containers.
  std::string output = run_batch_job(work,
                                     "#SBATCH --nodes=2\n"
                                     "#SBATCH --ntasks-per-node=2\n",
                                     "mpirun -np \"$SLURM_NTASKS\" \"$CAPSA\" exec \"$SIF\" /usr/local/bin/mpi_app "
                                     "--size \"$SLURM_NTASKS\"\n");
  auto ranks = ok_ranks(output, 4);
  EXPECT_EQ(ranks.size(), 4u) << output;
  EXPECT_EQ(hosts_of(ranks), (std::set<std::string>{"n1", "n2"})) << output;
}

// --- many ranks at once ------------------------------------------------------------------

TEST_F(Mpi, SixtyFourContainersOfOneSifStartAtOnceOnOneNode) {
  auto result = run_with_mpi_env(concat(concat(concat(srun("1", 64), {"--nodelist=n1"}), capsa_exec()),
                                        {"/bin/sh", "-c", "echo \"task $SLURM_PROCID on $(hostname) ok\""}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  std::set<std::string> tasks;
  std::regex line("task ([0-9]+) on n1 ok");
  for (std::sregex_iterator it(result.out.begin(), result.out.end(), line), end; it != end; ++it)
    tasks.insert((*it)[1]);
  EXPECT_EQ(tasks.size(), 64u) << result.out << result.err;
}

// Counts what the ranks' logs (capsa's progress lines) say was started: "blob ...: started"
// for a download, "converting ...: started" for a conversion (as tests/pull counts them).
struct PullCounts {
  int downloads = 0, conversions = 0;
};
PullCounts count_pull_work(const std::string& log) {
  PullCounts counts;
  for (std::size_t at = 0; (at = log.find(": started", at)) != std::string::npos; ++at) {
    std::size_t line = log.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    if (log.compare(line, 5, "blob ") == 0) ++counts.downloads;
    if (log.compare(line, 10, "converting") == 0) ++counts.conversions;
  }
  return counts;
}

TEST_F(Mpi, SixteenFirstRunsOnTwoNodesSharingACacheDownloadAndConvertOnce) {
  // A cache directory on a filesystem every node of the job sees (here: both logical
  // nodes, one kernel), empty at first; 16 ranks on 2 nodes all run `capsa exec docker://`.
  // The single-node case is tests/pull (ManyFirstTimeRunsOfOneImageDownloadAndConvertItOnce).
  std::string cache = work / "shared-cache";
  std::string image = "docker://" + test::test_registry().plain + "/public/debian:bookworm";
  auto result = run_with_mpi_env(
      concat(concat(srun("2", 16), {"--ntasks-per-node=8", "--output=" + (work / "rank-%t.log")}),
             {test::capsa_binary(), "exec", image, "/bin/sh", "-c", "echo \"rank $SLURM_PROCID on $(hostname) ok\""}),
      ExtraEnv{{"CAPSA_CACHEDIR=" + cache, "APPTAINER_NOHTTPS=1"}}, 900);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  PullCounts total;
  std::set<std::string> hosts;
  int ok = 0;
  for (int task = 0; task < 16; ++task) {
    std::string log = test::read_file(work / ("rank-" + std::to_string(task) + ".log"));
    PullCounts c = count_pull_work(log);
    total.downloads += c.downloads;
    total.conversions += c.conversions;
    std::smatch m;
    if (std::regex_search(log, m, std::regex("rank " + std::to_string(task) + " on (n[0-9]) ok"))) {
      ++ok;
      hosts.insert(m[1]);
    } else {
      ADD_FAILURE() << "task " << task << ":\n" << log;
    }
  }
  EXPECT_EQ(ok, 16);
  EXPECT_EQ(hosts, (std::set<std::string>{"n1", "n2"}));
  EXPECT_EQ(total.conversions, 1) << "one conversion for the whole job";
  EXPECT_EQ(total.downloads, 4) << "the image's 3 layers and its config, each downloaded once";
}

// --- mismatches: a hint, not a hang --------------------------------------------------------

TEST_F(Mpi, APmi2LauncherWithAPmixOnlyImageFailsWithAHint) {
  // srun --mpi=pmi2 offers PMI-2; the image's Open MPI has no PMI-2 library. Open MPI
  // aborts in MPI_Init; capsa names the cause first. run_process's time limit turns a
  // hang into a failure.
  auto result = run_with_mpi_env(
      concat(concat(srun("1", 2), {"--mpi=pmi2"}), concat(capsa_exec(), {"/usr/local/bin/mpi_app", "--size", "2"})), {},
      120);
  EXPECT_NE(result.exit_code, 0) << result.out << result.err;
  EXPECT_GT(result.exit_code, 0) << "srun ended by itself: " << result.err;
  EXPECT_NE(result.err.find("WARNING: this rank was started by srun --mpi=pmi2"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("srun --mpi=pmix"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("docs/mpi-and-slurm.md"), std::string::npos) << result.err;
  EXPECT_TRUE(ok_ranks(result.out, 2).empty()) << result.out;
}

TEST_F(Mpi, CleanenvUnderSrunWarnsThatTheLauncherIsCutOff) {
  auto result = run_with_mpi_env(concat(concat(srun("1", 1), capsa_exec()), {"/bin/true"}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err.find("WARNING"), std::string::npos) << "a matching pair is silent: " << result.err;
  auto clean = run_with_mpi_env(concat(srun("1", 1), {test::capsa_binary(), "exec", "--cleanenv", mpi_sif(), "/bin/true"}));
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_NE(clean.err.find("--cleanenv/--containall drop the PMIX_*/PMI_* variables"), std::string::npos) << clean.err;
}

}  // namespace
}  // namespace capsa::mpi
