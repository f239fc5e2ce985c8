// capsa's SPANK plugin (src/spank, docs/slurm-plugin.md) on the test cluster
// (tests/slurm/start.sh lists it in plugstack.conf): `srun --container-image=...` runs
// each task in the image, with pyxis' options, as root and as the unprivileged user. The
// MPI image (the mpi suite's SIF: Debian's Open MPI and mpi_app, which is nowhere on the
// host) and the busybox image of the test registry are used.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "mpi/mpi_support.hpp"
#include "support/background.hpp"
#include "support/leaks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::spank_testing {
namespace {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class SpankPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_program("srun")) GTEST_SKIP() << "no Slurm client";
    ASSERT_TRUE(std::filesystem::exists(mpi::mpi_sif())) << mpi::mpi_sif() << " (made by the mpi.image test)";
    ASSERT_EQ(::chmod(work.path().c_str(), 0755), 0);
    // The tasks start in the working directory, which must exist for them too.
    ASSERT_EQ(::chdir(work.path().c_str()), 0);
    auto help = run_process({"srun", "--help"});
    ASSERT_NE(help.out.find("--container-image"), std::string::npos)
        << "the plugin is not in the cluster's plugstack.conf (tests/slurm/start.sh)\n"
        << help.out << help.err;
  }
  void TearDown() override { ASSERT_EQ(::chdir("/"), 0); }

  // srun on `nodes` with the MPI variables, a cache of the test's own and `extra`.
  ProcessResult srun(const std::vector<std::string>& args, const std::vector<std::string>& extra = {},
                     const std::string& nodes = "n1") {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + (work / "cache"), "APPTAINER_NOHTTPS=1"};
    for (const auto& e : mpi::mpi_environment()) argv.push_back(e);
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"srun", "--nodelist=" + nodes, "--overcommit"});
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, "", 300);
  }
  std::string image_option() { return "--container-image=" + mpi::mpi_sif(); }

  TempDir work;
};

TEST_F(SpankPlugin, FourMpiRanksRunInTheImageWithPmix) {
  // mpi_app exists only in the image; it checks its rank and size against PMIx's and
  // the launcher's variables inside the container, an Allreduce and an Allgather.
  std::string required =
      "SLURM_JOB_ID,SLURM_STEP_ID,SLURM_PROCID,SLURM_NTASKS,SLURM_MPI_TYPE,"
      "PMIX_RANK,PMIX_NAMESPACE,PMIX_SERVER_URI41,PMIX_SERVER_TMPDIR,APPTAINER_CONTAINER";
  auto result = srun(
      {"-n", "4", "--mpi=pmix", image_option(), "/usr/local/bin/mpi_app", "--size", "4", "--require-env", required});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(mpi::ok_ranks(result.out, 4).size(), 4u) << result.out << result.err;
  EXPECT_FALSE(std::filesystem::exists("/usr/local/bin/mpi_app")) << "the test proves nothing on this host";
  // The PMIx server's datastore (in the slurmd spool, under the build tree here) is
  // bound into the step's instance: no PMIx client error, no fallback.
  EXPECT_EQ(result.err.find("PMIX ERROR"), std::string::npos) << result.err;
}

TEST_F(SpankPlugin, RanksOnTwoNodesRunInEachNodesContainer) {
  const char* nodes = std::getenv("CAPSA_TEST_SLURM_NODES");
  if (nodes == nullptr || std::atoi(nodes) < 2) GTEST_SKIP() << "a one-node test cluster";
  auto result = srun({"-N", "2", "-n", "4", "--mpi=pmix", image_option(), "/usr/local/bin/mpi_app", "--size", "4",
                      "--require-env", "PMIX_RANK,APPTAINER_INSTANCE"},
                     {}, "n1,n2");
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  auto ranks = mpi::ok_ranks(result.out, 4);
  EXPECT_EQ(ranks.size(), 4u) << result.out << result.err;
  EXPECT_EQ(mpi::hosts_of(ranks), (std::set<std::string>{"n1", "n2"})) << result.out;
  EXPECT_EQ(result.err.find("PMIX ERROR"), std::string::npos) << result.err;
}

TEST_F(SpankPlugin, TheTasksOfAStepShareOneContainer) {
  // One instance per step and node: every task joins the same mount namespace.
  auto result = srun({"-n", "4", image_option(), "/bin/sh", "-c",
                      "echo \"$APPTAINER_INSTANCE $(readlink /proc/self/ns/mnt) $SLURM_PROCID\""});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::set<std::string> containers, ranks;
  for (const auto& line : lines_of(result.out)) {
    containers.insert(line.substr(0, line.rfind(' ')));
    ranks.insert(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(ranks, (std::set<std::string>{"0", "1", "2", "3"})) << result.out;
  ASSERT_EQ(containers.size(), 1u) << result.out;
  EXPECT_TRUE(containers.begin()->starts_with("spank-")) << result.out;
  auto host = run_process({"readlink", "/proc/self/ns/mnt"});
  EXPECT_EQ(containers.begin()->find(host.out.substr(0, host.out.size() - 1)), std::string::npos) << "not the host's";
}

TEST_F(SpankPlugin, Pmi2VariablesReachTheTasks) {
  const std::string check =
      "[ -n \"$PMI_FD\" ] && [ -e /proc/self/fd/\"$PMI_FD\" ] && [ -e /.singularity.d ] && "
      "echo \"pmi $PMI_RANK of $PMI_SIZE\"";
  auto result = srun({"-n", "2", "--mpi=pmi2", image_option(), "/bin/sh", "-c", check});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("pmi 0 of 2"), std::string::npos) << result.out << result.err;
  EXPECT_NE(result.out.find("pmi 1 of 2"), std::string::npos) << result.out << result.err;
}

TEST_F(SpankPlugin, DockerImagesArePulledOncePerNodeThroughTheCache) {
  const std::string registry = test::test_registry().plain;
  // pyxis' REGISTRY#IMAGE form.
  auto result = srun({"-n", "3", "--container-image=docker://" + registry + "#public/busybox:1.0", "/bin/sh", "-c",
                      "[ -e /.singularity.d ] && echo in-image"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(lines_of(result.out), std::vector<std::string>(3, "in-image")) << result.err;
  // One image in the cache, made once (a second pull would have made the cache busy or
  // replaced the file): its modification time is kept by a later step.
  std::vector<std::string> sifs;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(work / "cache"))
    if (entry.is_regular_file() && entry.path().extension() == ".sif") sifs.push_back(entry.path());
  ASSERT_EQ(sifs.size(), 1u) << test::joined(sifs);
  const auto made = std::filesystem::last_write_time(sifs[0]);
  auto again = srun({"-n", "2", "--container-image=" + registry + "/public/busybox:1.0", "/bin/true"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(std::filesystem::last_write_time(sifs[0]), made);
}

TEST_F(SpankPlugin, MountsAndWorkdir) {
  std::filesystem::create_directories(work / "data");
  work.write("data/in.txt", "from the host\n");
  auto result = srun({"-n", "1", image_option(), "--container-mounts=" + (work / "data") + ":/data:ro," + work.path(),
                      "--container-workdir=/data", "/bin/sh", "-c",
                      "pwd; cat in.txt; touch /data/new 2>/dev/null || echo read-only; ls " + work.path() + "/data"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.out, "/data\nfrom the host\nread-only\nin.txt\n") << result.err;
}

TEST_F(SpankPlugin, RepeatedAndInheritedMountsAllArrive) {
  // Slurm hands slurmstepd the last value of an option only: two --container-mounts on
  // one line, and one inherited from an allocation plus the srun line's, all apply.
  for (const char* name : {"a", "b", "c"}) {
    std::filesystem::create_directories(work / name);
    work.write(std::string(name) + "/f", std::string(name) + "\n");
  }
  auto repeated = srun({"-n", "1", image_option(), "--container-mounts=" + (work / "a") + ":/a",
                        "--container-mounts=" + (work / "b") + ":/b", "/bin/sh", "-c", "cat /a/f /b/f"});
  EXPECT_EQ(repeated.exit_code, 0) << repeated.err;
  EXPECT_EQ(repeated.out, "a\nb\n") << repeated.err;
  auto inherited =
      srun({"-n", "1", image_option(), "--container-mounts=" + (work / "c") + ":/c", "/bin/sh", "-c", "cat /a/f /c/f"},
           {"SLURM_SPANK__SLURM_SPANK_OPTION_capsa_container_mounts=" + (work / "a") + ":/a"});
  EXPECT_EQ(inherited.exit_code, 0) << inherited.err;
  EXPECT_EQ(inherited.out, "a\nc\n") << inherited.err;
}

TEST_F(SpankPlugin, ContainerEnvPassesTheJobsValue) {
  // capsa withholds the host's LD_LIBRARY_PATH from a container; --container-env passes it.
  const std::vector<std::string> marker = {"LD_LIBRARY_PATH=/capsa-spank-marker"};
  const std::vector<std::string> print = {"/bin/sh", "-c", "echo \"ld=$LD_LIBRARY_PATH\""};
  std::vector<std::string> with = {"-n", "1", image_option(), "--container-env=LD_LIBRARY_PATH"};
  with.insert(with.end(), print.begin(), print.end());
  auto passed = srun(with, marker);
  EXPECT_EQ(passed.exit_code, 0) << passed.err;
  EXPECT_NE(passed.out.find("/capsa-spank-marker"), std::string::npos) << passed.out;
  std::vector<std::string> without = {"-n", "1", image_option()};
  without.insert(without.end(), print.begin(), print.end());
  auto withheld = srun(without, marker);
  EXPECT_EQ(withheld.exit_code, 0) << withheld.err;
  EXPECT_EQ(withheld.out.find("/capsa-spank-marker"), std::string::npos) << withheld.out;
}

TEST_F(SpankPlugin, ContainerEnvTakesLongValuesAndSkipsUnsetNames) {
  // A value longer than a first 64 KiB buffer arrives whole; a name the job lacks is not
  // set to "" inside.
  const std::string long_value(100000, 'x');
  auto result = srun({"-n", "1", image_option(), "--container-env=CAPSA_SPANK_LONG,CAPSA_SPANK_NOT_SET", "/bin/sh",
                      "-c", "echo ${#CAPSA_SPANK_LONG} ${CAPSA_SPANK_NOT_SET-unset}"},
                     {"CAPSA_SPANK_LONG=" + long_value});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "100000 unset\n") << result.err;
}

TEST_F(SpankPlugin, HomeIsMountedUnlessRefused) {
  const std::string count = "grep -c \" $HOME \" /proc/self/mountinfo || true";
  auto mounted = srun({"-n", "1", image_option(), "/bin/sh", "-c", count});
  EXPECT_EQ(mounted.exit_code, 0) << mounted.err;
  EXPECT_NE(mounted.out, "0\n") << mounted.err;
  auto refused = srun({"-n", "1", image_option(), "--no-container-mount-home", "/bin/sh", "-c", count});
  EXPECT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_EQ(refused.out, "0\n") << refused.err;
  // The last of the two flags wins, as in pyxis: --container-mount-home asks for it again.
  auto asked =
      srun({"-n", "1", image_option(), "--no-container-mount-home", "--container-mount-home", "/bin/sh", "-c", count});
  EXPECT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_NE(asked.out, "0\n") << asked.err;
}

TEST_F(SpankPlugin, RemapRootIsRootInside) {
  auto remapped = srun({"-n", "2", image_option(), "--container-remap-root", "/usr/bin/id", "-u"});
  EXPECT_EQ(remapped.exit_code, 0) << remapped.err;
  EXPECT_EQ(remapped.out, "0\n0\n") << remapped.err;
  auto plain = srun({"-n", "1", image_option(), "/usr/bin/id", "-u"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, std::to_string(::getuid()) + "\n") << plain.err;
}

TEST_F(SpankPlugin, ANamedContainerKeepsItsFilesForLaterStepsOfTheJob) {
  // Steps of one allocation: the first writes into the named container, the second
  // (without --container-image) reads that and writes too, right after the first (whose
  // instance must have let the layer go), the third reads; an unnamed writable container
  // keeps nothing.
  // The writers are root inside (--container-remap-root): /opt is root's in the image.
  const std::string script =
      "echo job=$SLURM_JOB_ID; "
      "srun -n 2 --container-name=dev --container-image=" +
      mpi::mpi_sif() +
      " --container-writable --container-remap-root /bin/sh -c 'echo kept-$SLURM_PROCID > /opt/step1-$SLURM_PROCID'; "
      "srun -n 1 --container-name=dev --container-writable --container-remap-root /bin/sh -c "
      "'cat /opt/step1-0 /opt/step1-1 && echo more > /opt/step2'; "
      "srun -n 1 --container-name=dev /bin/sh -c 'cat /opt/step2'; "
      "srun -n 1 --container-image=" +
      mpi::mpi_sif() +
      " --container-writable --container-remap-root /bin/sh -c "
      "'touch /opt/unnamed && echo wrote'; "
      "srun -n 1 --container-image=" +
      mpi::mpi_sif() + " /bin/sh -c 'ls /opt/unnamed 2>/dev/null || echo gone'";
  auto result = run_process({"env", "CAPSA_CACHEDIR=" + (work / "cache"), "salloc", "--nodelist=n1", "-n", "2",
                             "--overcommit", "/bin/sh", "-c", script},
                            "", 300);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 6u) << result.out << result.err;
  EXPECT_EQ(std::vector<std::string>(lines.begin() + 1, lines.end()),
            (std::vector<std::string>{"kept-0", "kept-1", "more", "wrote", "gone"}))
      << result.out << result.err;
  // The job's epilog removes the named container's files.
  const std::string job_dir =
      "/tmp/capsa-spank-" + std::to_string(::getuid()) + "/n1/" + lines[0].substr(lines[0].find('=') + 1);
  EXPECT_TRUE(test::eventually([&] { return !std::filesystem::exists(job_dir); }, 30)) << job_dir;
}

TEST_F(SpankPlugin, ABadImageFailsTheStepWithCapsasMessage) {
  auto result = srun({"-n", "2", "--container-image=" + (work / "missing.sif"), "/bin/true"});
  EXPECT_NE(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("capsa: error:"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(work / "missing.sif"), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST_F(SpankPlugin, BadOptionsAreRefusedBeforeTheJob) {
  auto mounts = srun({"-n", "1", image_option(), "--container-mounts=data:/data", "/bin/true"});
  EXPECT_NE(mounts.exit_code, 0);
  EXPECT_NE(mounts.err.find("--container-mounts: the source of 'data:/data' must be an absolute path"),
            std::string::npos)
      << mounts.err;
  auto alone = srun({"-n", "1", "--container-workdir=/tmp", "/bin/true"});
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("need --container-image or --container-name"), std::string::npos) << alone.err;
  // sbatch and salloc check them as srun does, before the job.
  auto batch = run_process({"sbatch", "--nodelist=n1", "--container-save=/tmp/", "--wrap=true"});
  EXPECT_NE(batch.exit_code, 0);
  EXPECT_NE(batch.err.find("--container-save: '/tmp/' names a directory"), std::string::npos) << batch.err;
  auto allocation = run_process({"salloc", "--nodelist=n1", "--container-mounts=/a:/b", "/bin/true"});
  EXPECT_NE(allocation.exit_code, 0);
  EXPECT_NE(allocation.err.find("need --container-image or --container-name"), std::string::npos) << allocation.err;
}

TEST_F(SpankPlugin, ScancelMidStepLeavesNoMountFuseServerOrLoopDevice) {
  // A private copy of the image, so that whatever serves it is this test's own.
  const std::string image = work / "cancel.sif";
  std::filesystem::copy_file(mpi::mpi_sif(), image);
  const std::string marker = "CAPSA_SPANK_TEST_MARKER=" + work.path();
  const std::string script = "#!/bin/sh\n#SBATCH --nodelist=n1\n#SBATCH -n 2\n#SBATCH --output=" + (work / "job.out") +
                             "\nsrun -n 2 --container-image=" + image +
                             " /bin/sh -c 'echo ready-$SLURM_PROCID; exec sleep 300'\n";
  auto job_output = [&] {
    return std::filesystem::exists(work / "job.out") ? test::read_file(work / "job.out") : std::string();
  };
  auto submitted = run_process({"env", marker, "sbatch", "--parsable", work.write("job.sh", script)});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job = submitted.out.substr(0, submitted.out.find_first_of(";\n"));
  ASSERT_TRUE(test::eventually(
      [&] {
        const auto out = job_output();
        return out.find("ready-0") != std::string::npos && out.find("ready-1") != std::string::npos;
      },
      120))
      << job_output();
  EXPECT_FALSE(test::processes_with_argument(image).empty() && test::loop_devices_backed_by(image).empty())
      << "the image is served while the step runs";
  EXPECT_EQ(run_process({"scancel", job}).exit_code, 0);
  EXPECT_TRUE(test::eventually(
      [&] {
        return test::processes_with_argument(image).empty() && test::loop_devices_backed_by(image).empty() &&
               test::mounts_naming(image).empty() && test::processes_with_environment(marker).empty();
      },
      60))
      << "servers: " << test::joined(test::processes_with_argument(image))
      << "loop devices: " << test::joined(test::loop_devices_backed_by(image))
      << "mounts: " << test::joined(test::mounts_naming(image))
      << "processes: " << test::joined(test::processes_with_environment(marker));
}

// Files a save left beside its target: its temporary names start with the target's.
std::vector<std::string> leftovers_of(const std::string& dir, const std::string& name) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto file = entry.path().filename().string();
    if (file.starts_with(name) && file != name) found.push_back(entry.path());
  }
  return found;
}

TEST_F(SpankPlugin, ContainerSaveWritesTheContainersRootOnceTheStepSucceeded) {
  // Two tasks write into the container's tmpfs layer; the node saves it once they have
  // succeeded (a relative PATH is the job's directory's), and the image runs again, with
  // `capsa exec` and as --container-image, root-only files of the image kept as root's.
  const std::string write =
      "echo saved-$SLURM_PROCID > /opt/mark-$SLURM_PROCID && { [ $SLURM_PROCID != 0 ] || rm /usr/local/bin/mpi_app; }";
  // The user needs --container-remap-root to write into /opt and to save; root's own
  // container keeps the image's owners as they are.
  std::vector<std::string> args = {"-n", "2", image_option(), "--container-writable", "--container-save=saved.sif"};
  if (::getuid() != 0) args.emplace_back("--container-remap-root");
  args.insert(args.end(), {"/bin/sh", "-c", write});
  auto saved = srun(args, {"PWD=" + work.path()});
  ASSERT_EQ(saved.exit_code, 0) << saved.out << saved.err;
  ASSERT_TRUE(std::filesystem::is_regular_file(work / "saved.sif")) << saved.err;
  EXPECT_EQ(leftovers_of(work.path(), "saved.sif"), std::vector<std::string>{});
  // The image's owners as they are recorded: root sees them as they are, the user with
  // --fakeroot (subordinate ids for the others).
  std::vector<std::string> exec = {test::capsa_binary(), "exec"};
  if (::getuid() != 0) exec.emplace_back("--fakeroot");
  exec.insert(exec.end(), {work / "saved.sif", "/bin/sh", "-c",
                           "cat /opt/mark-0 /opt/mark-1; ls /usr/local/bin/mpi_app 2>/dev/null || echo removed; "
                           "stat -c '%u %g %a' /etc/shadow; stat -c %u /opt/mark-0"});
  auto again = run_process(exec);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "saved-0\nsaved-1\nremoved\n0 42 640\n0\n") << again.err;
  auto as_image = srun({"-n", "1", "--container-image=" + (work / "saved.sif"), "/bin/cat", "/opt/mark-1"});
  EXPECT_EQ(as_image.exit_code, 0) << as_image.err;
  EXPECT_EQ(as_image.out, "saved-1\n") << as_image.err;
  // The unnamed container's layer went with its step.
  auto fresh = srun({"-n", "1", image_option(), "/bin/sh", "-c", "ls /opt/mark-0 2>/dev/null || echo fresh"});
  EXPECT_EQ(fresh.out, "fresh\n") << fresh.err;
}

TEST_F(SpankPlugin, ContainerSaveWritesNothingWhenATaskFails) {
  const std::string target = work / "failed.sif";
  auto failed = srun({"-n", "2", image_option(), "--container-writable", "--container-remap-root",
                      "--container-save=" + target, "/bin/sh", "-c", "touch /opt/x; [ $SLURM_PROCID = 0 ] || exit 3"});
  EXPECT_NE(failed.exit_code, 0) << failed.out << failed.err;
  EXPECT_FALSE(std::filesystem::exists(target));
  EXPECT_EQ(leftovers_of(work.path(), "failed.sif"), std::vector<std::string>{});
  EXPECT_NE(failed.err.find("--container-save: " + target + " not written"), std::string::npos) << failed.err;
  // A save that cannot be written says why, and leaves nothing.
  auto unwritable = srun({"-n", "1", image_option(), "--container-remap-root",
                          "--container-save=" + (work / "missing-dir/x.sif"), "/bin/true"});
  EXPECT_NE(unwritable.err.find("instance save"), std::string::npos) << unwritable.err;
  EXPECT_FALSE(std::filesystem::exists(work / "missing-dir"));
  // A user's container without --container-remap-root cannot read all of its image.
  if (::getuid() != 0) {
    auto unmapped = srun({"-n", "1", image_option(), "--container-save=" + target, "/bin/true"});
    EXPECT_NE(unmapped.err.find("--container-remap-root"), std::string::npos) << unmapped.err;
    EXPECT_FALSE(std::filesystem::exists(target));
    EXPECT_EQ(leftovers_of(work.path(), "failed.sif"), std::vector<std::string>{});
  }
}

TEST_F(SpankPlugin, TheEntrypointRunsOnlyWhenAsked) {
  // The test registry's noshell image: ENTRYPOINT ["/bin/echo", "entry:"]. As Docker and
  // pyxis do, the task's command becomes the entrypoint's arguments.
  const std::string image = "--container-image=" + test::test_registry().plain + "#public/noshell:latest";
  auto with = srun({"-n", "2", image, "--container-entrypoint", "/bin/echo", "task"});
  EXPECT_EQ(with.exit_code, 0) << with.err;
  EXPECT_EQ(lines_of(with.out), std::vector<std::string>(2, "entry: /bin/echo task")) << with.err;
  auto without = srun({"-n", "1", image, "/bin/echo", "task"});
  EXPECT_EQ(without.exit_code, 0) << without.err;
  EXPECT_EQ(without.out, "task\n") << without.err;
  auto refused = srun({"-n", "1", image, "--container-entrypoint", "--no-container-entrypoint", "/bin/echo", "task"});
  EXPECT_EQ(refused.out, "task\n") << refused.err;
}

TEST_F(SpankPlugin, SbatchRunsTheBatchScriptInTheContainer) {
  // The option on sbatch's command line, and as #SBATCH in the script, as pyxis takes it.
  const std::string body = "[ -x /usr/local/bin/mpi_app ] && [ -e /.singularity.d ] && echo batch-in-image\n";
  const std::string line_script = work.write("line.sh", "#!/bin/sh\n" + body);
  auto by_line = run_process(
      {"sbatch", "--wait", "--nodelist=n1", "--output=" + (work / "line.out"), image_option(), line_script}, "", 300);
  EXPECT_EQ(by_line.exit_code, 0) << by_line.out << by_line.err;
  EXPECT_EQ(test::read_file(work / "line.out"), "batch-in-image\n");
  const std::string directive_script = work.write("directive.sh", "#!/bin/sh\n#SBATCH " + image_option() + "\n" + body);
  auto by_directive = run_process(
      {"sbatch", "--wait", "--nodelist=n1", "--output=" + (work / "directive.out"), directive_script}, "", 300);
  EXPECT_EQ(by_directive.exit_code, 0) << by_directive.out << by_directive.err;
  EXPECT_EQ(test::read_file(work / "directive.out"), "batch-in-image\n");
  // Without the option the script runs on the host, where mpi_app is not.
  auto plain =
      run_process({"sbatch", "--wait", "--nodelist=n1", "--output=" + (work / "plain.out"), line_script}, "", 300);
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_EQ(test::read_file(work / "plain.out"), "");
}

TEST_F(SpankPlugin, SallocOptionsAreInheritedByEachSrunOfTheJob) {
  // salloc's command runs on the host; its sruns run in the image, with the options of
  // their own command line added.
  // An inherited flag is overridden by its opposite on the srun line (slurmstepd gets both).
  const std::string home_mounts = "grep -c \" $HOME \" /proc/self/mountinfo || true";
  const std::string script =
      "[ -e /usr/local/bin/mpi_app ] || echo shell-on-host; "
      "srun -n 1 /bin/sh -c '[ -x /usr/local/bin/mpi_app ] && echo step-in-image; " +
      home_mounts +
      "'; "
      "srun -n 1 --container-workdir=/opt /bin/pwd; "
      "srun -n 1 --container-mount-home /bin/sh -c '" +
      home_mounts + "'";
  auto result = run_process({"env", "CAPSA_CACHEDIR=" + (work / "cache"), "salloc", "--nodelist=n1", "-n", "1",
                             image_option(), "--no-container-mount-home", "/bin/sh", "-c", script},
                            "", 300);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 5u) << result.out << result.err;
  EXPECT_EQ(std::vector<std::string>(lines.begin(), lines.begin() + 4),
            (std::vector<std::string>{"shell-on-host", "step-in-image", "0", "/opt"}))
      << result.err;
  EXPECT_NE(lines[4], "0") << result.out;
}

}  // namespace
}  // namespace capsa::spank_testing
