#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::cli {
namespace {

using test::run_process;

TEST(Cli, HelpListsEveryCommand) {
  auto result = run_process({test::capsa_binary(), "--help"});
  EXPECT_EQ(result.exit_code, 0);
  for (const char* command : {"sif", "inspect", "version", "help", "exec", "run", "shell", "test", "run-help", "cache", "build"})
    EXPECT_NE(result.out.find(command), std::string::npos) << command << " missing from:\n" << result.out;
}

TEST(Cli, HelpCommandDescribesASubcommand) {
  auto result = run_process({test::capsa_binary(), "help", "sif", "add"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("--datatype"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("--sbomformat"), std::string::npos) << result.out;
}

TEST(Cli, HelpForAnUnknownCommandFails) {
  auto result = run_process({test::capsa_binary(), "help", "frobnicate"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("unknown command \"frobnicate\""), std::string::npos) << result.err;
}

TEST(Cli, VersionShowsVersionCommitAndFeatures) {
  auto result = run_process({test::capsa_binary(), "version"});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out.rfind("capsa 0.", 0), 0u) << result.out;
  EXPECT_NE(result.out.find("commit:"), std::string::npos);
  EXPECT_NE(result.out.find("features:"), std::string::npos);
}

TEST(Cli, EveryFeatureVersionListsIsACommandHelpShows) {
  auto version = run_process({test::capsa_binary(), "version"});
  auto help = run_process({test::capsa_binary(), "--help"});
  ASSERT_EQ(version.exit_code, 0);
  std::istringstream lines(version.out.substr(version.out.find("features:\n") + 10));
  std::string line;
  int features = 0;
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    ++features;
    std::string name = line.substr(2, line.find(':') - 2);
    // gpu and mpi are flags and launch modes of the actions, not commands of their own.
    std::string command = name == "gpu" || name == "mpi" ? "exec" : name;
    EXPECT_NE(help.out.find("  " + command), std::string::npos) << name << " is listed but capsa has no " << command;
  }
  EXPECT_GE(features, 7) << version.out;
}

TEST(Cli, UnknownCommandIsAUsageError) {
  auto result = run_process({test::capsa_binary(), "frobnicate"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_FALSE(result.err.empty());
}

TEST(Cli, SingularityAndApptainerNamesBehaveIdentically) {
  test::TempDir dir;
  std::string sif = test::sif_fixture("real/busybox_amd64.sif");
  auto reference = run_process({test::capsa_binary(), "sif", "list", sif});
  ASSERT_EQ(reference.exit_code, 0);
  for (const char* alias : {"singularity", "apptainer"}) {
    std::string link = dir / alias;
    ASSERT_EQ(::symlink(test::capsa_binary().c_str(), link.c_str()), 0);
    auto result = run_process({link, "sif", "list", sif});
    EXPECT_EQ(result.exit_code, 0) << alias;
    EXPECT_EQ(result.out, reference.out) << alias;
    auto help = run_process({link, "--help"});
    EXPECT_NE(help.out.find(alias), std::string::npos) << "help names the program as called";
  }
}

TEST(Cli, CommandsNotYetImplementedSaySoInOneLine) {
  auto result = run_process({test::capsa_binary(), "instance", "start", "image.sif", "name"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "capsa: error: 'instance' is not implemented in this version of capsa yet; see `capsa --help`\n");
}

TEST(Cli, RunSingularityNameRunsTheImage) {
  // A SIF's launch line calls `run-singularity IMAGE ARGS`: capsa treats it as `run`.
  test::TempDir dir;
  std::string link = dir / "run-singularity";
  ASSERT_EQ(::symlink(test::capsa_binary().c_str(), link.c_str()), 0);
  auto result = run_process({link, test::sif_fixture("real/busybox_amd64.sif"), "echo", "ran"}, "", 60);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "ran\n");
}

TEST(Cli, ASifFileIsExecutable) {
  // `./image.sif ARGS`: the kernel runs the launch line, /usr/bin/env finds run-singularity.
  test::TempDir dir;
  std::string bin = dir / "bin";
  ASSERT_EQ(::mkdir(bin.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(test::capsa_binary().c_str(), (bin + "/run-singularity").c_str()), 0);
  std::string image = dir / "busybox.sif";
  ASSERT_EQ(run_process({"cp", test::sif_fixture("real/busybox_amd64.sif"), image}).exit_code, 0);
  ASSERT_EQ(::chmod(image.c_str(), 0755), 0);
  auto result = run_process({"env", "PATH=" + bin + ":/usr/bin:/bin", image, "echo", "launched"}, "", 60);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "launched\n");
}

}  // namespace
}  // namespace capsa::cli
