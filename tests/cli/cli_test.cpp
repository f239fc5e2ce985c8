#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

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

#if CAPSA_STATIC_RUNNER
// Every container start pays the dynamic loader for each library the runner needs: a
// libarchive (with libxml2 and ICU) and libcrypto pulled in through one stray reference
// took 2 to 5 ms of every start (bench/phases.c shows it as start>main).
TEST(Cli, TheRunnerLoadsNoSharedLibraryButLibcAndTheLoader) {
  auto result = run_process({"readelf", "--dynamic", test::capsa_binary()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string line;
  int needed = 0;
  while (std::getline(lines, line)) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    ++needed;
    // The loader itself (its __tls_get_addr) costs nothing more: it is loaded anyway.
    const bool libc = line.find("[libc.so.6]") != std::string::npos || line.find("[ld-linux") != std::string::npos;
    EXPECT_TRUE(libc) << "the runner loads " << line;
  }
  EXPECT_GE(needed, 1) << result.out;
}
#endif

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

// `buildcfg` answers with the folders of the configured prefix (capsa runs from its build
// tree here); tests/cli/relocated_install_test.cpp checks a moved prefix's answer.
TEST(Cli, BuildcfgPrintsTheConfiguredFoldersAsApptainerNamesThem) {
  auto all = run_process({test::capsa_binary(), "buildcfg"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::istringstream lines(all.out);
  std::vector<std::string> keys;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_NE(line.find('='), std::string::npos) << line;
    keys.push_back(line.substr(0, line.find('=')));
  }
  // Apptainer's keys in Apptainer's order (cmd/internal/cli/buildconfig.go).
  const std::vector<std::string> apptainer = {"PACKAGE_NAME",
                                              "PACKAGE_VERSION",
                                              "BUILDDIR",
                                              "PREFIX",
                                              "EXECPREFIX",
                                              "BINDIR",
                                              "SBINDIR",
                                              "LIBEXECDIR",
                                              "DATAROOTDIR",
                                              "DATADIR",
                                              "SYSCONFDIR",
                                              "SHAREDSTATEDIR",
                                              "LOCALSTATEDIR",
                                              "RUNSTATEDIR",
                                              "INCLUDEDIR",
                                              "DOCDIR",
                                              "INFODIR",
                                              "LIBDIR",
                                              "LOCALEDIR",
                                              "MANDIR",
                                              "APPTAINER_CONFDIR",
                                              "SESSIONDIR",
                                              "PLUGIN_ROOTDIR",
                                              "APPTAINER_CONF_FILE",
                                              "APPTAINER_SUID_INSTALL"};
  EXPECT_EQ(keys, apptainer) << all.out;
  EXPECT_NE(all.out.find("PACKAGE_NAME=capsa\n"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("APPTAINER_SUID_INSTALL=0\n"), std::string::npos) << all.out;

  // One key: its value alone, the one in the list.
  auto prefix = run_process({test::capsa_binary(), "buildcfg", "PREFIX"});
  EXPECT_EQ(prefix.exit_code, 0) << prefix.err;
  ASSERT_FALSE(prefix.out.empty());
  EXPECT_NE(all.out.find("\nPREFIX=" + prefix.out), std::string::npos) << prefix.out;
  auto sysconfdir = run_process({test::capsa_binary(), "buildcfg", "SYSCONFDIR"}).out;
  ASSERT_EQ(sysconfdir.find('/'), 0u) << sysconfdir;
  sysconfdir.pop_back();  // the newline
  EXPECT_EQ(run_process({test::capsa_binary(), "buildcfg", "APPTAINER_CONFDIR"}).out, sysconfdir + "/capsa\n");
  auto session =
      run_process({"env", "CAPSA_SESSION_DIR=/somewhere/sessions", test::capsa_binary(), "buildcfg", "SESSIONDIR"});
  EXPECT_EQ(session.out, "/somewhere/sessions\n");

  auto unknown = run_process({test::capsa_binary(), "buildcfg", "NOPE"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.out, "");
  EXPECT_NE(unknown.err.find("no variable named \"NOPE\""), std::string::npos) << unknown.err;
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

TEST(Cli, VersionIsApptainersUnderItsNames) {
  // Snakemake, cwltool and Nextflow parse `singularity --version`; Apptainer prints
  // "apptainer version X.Y.Z" under both names, and the bare number for `version`.
  test::TempDir dir;
  for (const char* alias : {"singularity", "apptainer"}) {
    std::string link = dir / alias;
    ASSERT_EQ(::symlink(test::capsa_binary().c_str(), link.c_str()), 0);
    auto flag = run_process({link, "--version"});
    EXPECT_EQ(flag.exit_code, 0) << flag.err;
    EXPECT_EQ(flag.out, "apptainer version 1.4.5\n") << alias;
    auto command = run_process({link, "version"});
    EXPECT_EQ(command.out, "1.4.5\n") << alias;
  }
  auto own = run_process({test::capsa_binary(), "--version"});
  EXPECT_EQ(own.out.rfind("capsa version ", 0), 0u) << own.out;
  EXPECT_NE(own.out.find("(Apptainer 1.4.5 command line)"), std::string::npos) << own.out;
}

TEST(Cli, GlobalFlagsComeBeforeTheCommandWithApptainersMeaning) {
  std::string sif = test::sif_fixture("real/busybox_amd64.sif");
  // An unknown --no-mount name is a warning (Apptainer's), which shows what each level lets through.
  auto run = [&](std::vector<std::string> global) {
    std::vector<std::string> args = {test::capsa_binary()};
    args.insert(args.end(), global.begin(), global.end());
    args.insert(args.end(), {"exec", "--no-mount", "nonesuch", sif, "echo", "ran"});
    return run_process(args, "", 60);
  };
  const std::string warning = "WARNING: Ignoring unknown mount type 'nonesuch'";
  auto plain = run({});
  EXPECT_EQ(plain.out, "ran\n") << plain.err;
  EXPECT_NE(plain.err.find(warning), std::string::npos) << plain.err;
  for (const char* silent : {"-s", "--silent"}) {
    auto result = run({silent});
    EXPECT_EQ(result.out, "ran\n") << result.err;
    EXPECT_EQ(result.err, "") << silent << " prints errors only";
  }
  for (const char* quiet : {"-q", "--quiet"}) {
    auto result = run({quiet});
    EXPECT_NE(result.err.find(warning), std::string::npos) << quiet << " keeps warnings: " << result.err;
  }
  for (const char* debug : {"-d", "--debug"}) {
    auto result = run({debug});
    EXPECT_NE(result.err.find("mount plan"), std::string::npos) << debug << ": " << result.err;
  }
  // Snakemake's form, and the flags that change nothing capsa prints.
  for (std::vector<std::string> flags : {std::vector<std::string>{"--quiet", "--silent"},
                                         std::vector<std::string>{"-v"}, std::vector<std::string>{"--nocolor"}}) {
    auto result = run(flags);
    EXPECT_EQ(result.exit_code, 0) << flags[0] << ": " << result.err;
    EXPECT_EQ(result.out, "ran\n");
  }
}

TEST(Cli, UsageErrorsAreOneLineAndExitOne) {
  const std::string missing = "/nonexistent/image.sif";
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"exec", "--frobnicate", missing, "true"},
       "capsa: error: unknown flag --frobnicate for exec (see `capsa help exec`)\n"},
      {{"run", "--frobnicate=1", missing}, "capsa: error: unknown flag --frobnicate for run (see `capsa help run`)\n"},
      {{"exec", "--dmtcp-launch", "2", missing, "true"},
       "capsa: error: --dmtcp-launch is not supported (capsa has no DMTCP checkpointing)\n"},
      {{"shell", "--dmtcp-launch", "ckpt", missing},
       "capsa: error: --dmtcp-launch is not supported (capsa has no DMTCP checkpointing)\n"},
      {{"-c", "/nonexistent/site.conf", "exec", missing, "true"},
       "capsa: error: reading the configuration /nonexistent/site.conf: No such file or directory\n"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {test::capsa_binary()};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto result = run_process(args);
    EXPECT_EQ(result.exit_code, 1) << c.args[0] << " " << c.args[1];
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err, c.err) << "one line, and the image is never looked up";
  }
  auto global = run_process({test::capsa_binary(), "--frobnicate", "exec", missing, "true"});
  EXPECT_EQ(global.exit_code, 1);
  EXPECT_EQ(global.err.find('\n'), global.err.size() - 1) << global.err;
}

TEST(Cli, CommandsThatCannotMeanAnythingHereSaySoInOneLine) {
  auto result = run_process({test::capsa_binary(), "checkpoint", "list"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err,
            "capsa: error: 'checkpoint' is not supported (it drives DMTCP, which Debian 12 does not package)\n");
  EXPECT_TRUE(result.out.empty());
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
