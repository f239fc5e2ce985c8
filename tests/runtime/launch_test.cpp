// capsa exec/run/shell on a real SIF (the Singularity-pulled busybox image), for real:
// namespaces, FUSE or loop mounts, overlay and binds. The suite runs as root and as the
// unprivileged test user, so both mechanisms are exercised.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/unprivileged.hpp"

namespace capsa::runtime {
namespace {

using test::run_process;

std::string busybox() { return test::sif_fixture("real/busybox_amd64.sif"); }

test::ProcessResult capsa(std::vector<std::string> args) {
  args.insert(args.begin(), test::capsa_binary());
  return run_process(args, "", 60);
}

using testing::mount_table;

TEST(Launch, CommandRunsAsTheCallerInTheCallersDirectory) {
  test::TempDir dir;
  ASSERT_EQ(::chdir(dir.path().c_str()), 0);
  auto result = capsa({"exec", busybox(), "sh", "-c", "id -u; id -g; pwd"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, std::to_string(::getuid()) + "\n" + std::to_string(::getgid()) + "\n" + dir.path() + "\n");
  ASSERT_EQ(::chdir("/"), 0);
}

TEST(Launch, ExitStatusIsTheCommands) {
  EXPECT_EQ(capsa({"exec", busybox(), "sh", "-c", "exit 7"}).exit_code, 7);
  auto missing = capsa({"exec", busybox(), "no-such-command"});
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
}

TEST(Launch, TheCallerIsKnownToTheContainersUserDatabase) {
  auto result = capsa({"exec", busybox(), "sh", "-c", "whoami; grep -c '^root:' /etc/passwd"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::string me = run_process({"id", "-un"}).out;
  EXPECT_EQ(result.out, me + "1\n");
}

TEST(Launch, BindsAreVisibleAndReadOnlyBindsCannotBeWritten) {
  test::TempDir dir;
  dir.write("input.txt", "payload\n");
  auto result = capsa({"exec", "-B", dir.path() + ":/data/in:ro", busybox(), "sh", "-c",
                       "cat /data/in/input.txt; touch /data/in/new 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "payload\nREFUSED\n");
  auto rw = capsa({"exec", "--bind", dir.path() + ":/out", busybox(), "sh", "-c", "echo made > /out/made.txt"});
  EXPECT_EQ(rw.exit_code, 0) << rw.err;
  EXPECT_EQ(test::read_file(dir / "made.txt"), "made\n");
}

TEST(Launch, BindsFromTheEnvironmentApply) {
  test::TempDir dir;
  dir.write("f", "env-bind\n");
  auto result = run_process({"env", "SINGULARITY_BIND=" + dir.path() + ":/from-env", test::capsa_binary(), "exec",
                             busybox(), "cat", "/from-env/f"},
                            "", 60);
  EXPECT_EQ(result.out, "env-bind\n") << result.err;
}

TEST(Launch, EnvironmentInjectionAndCleanenv) {
  auto result = run_process({"env", "CAPSA_HOST_VAR=host", "APPTAINERENV_INJECTED=yes", test::capsa_binary(), "exec",
                             "--env", "FROM_FLAG=a b", busybox(), "sh", "-c",
                             "echo \"$CAPSA_HOST_VAR|$INJECTED|$FROM_FLAG|$APPTAINER_NAME\""},
                            "", 60);
  EXPECT_EQ(result.out, "host|yes|a b|busybox_amd64.sif\n") << result.err;
  auto clean = run_process({"env", "CAPSA_HOST_VAR=host", test::capsa_binary(), "exec", "--cleanenv", busybox(), "sh",
                            "-c", "echo \"[$CAPSA_HOST_VAR]\""},
                           "", 60);
  EXPECT_EQ(clean.out, "[]\n") << clean.err;
}

TEST(Launch, ContainHidesHostTmpAndHome) {
  test::TempDir dir;  // under the host's /tmp
  auto result = capsa({"exec", "--contain", busybox(), "sh", "-c", "ls -A /tmp | wc -l; ls /dev | wc -l"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  int tmp_entries = -1, dev_entries = -1;
  lines >> tmp_entries >> dev_entries;
  EXPECT_EQ(tmp_entries, 0);
  EXPECT_LT(dev_entries, 12) << "a minimal /dev";
}

TEST(Launch, ImageIsReadOnlyUnlessWritableTmpfsAndWritesAreDiscarded) {
  auto ro = capsa({"exec", busybox(), "sh", "-c", "touch /newfile 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(ro.out, "REFUSED\n") << ro.err;
  auto rw = capsa({"exec", "--writable-tmpfs", busybox(), "sh", "-c", "echo x > /newfile && cat /newfile"});
  EXPECT_EQ(rw.out, "x\n") << rw.err;
  auto again = capsa({"exec", busybox(), "sh", "-c", "test -e /newfile && echo KEPT || echo GONE"});
  EXPECT_EQ(again.out, "GONE\n");
}

TEST(Launch, RunShellAndTestActions) {
  EXPECT_EQ(capsa({"run", busybox(), "echo", "from-run"}).out, "from-run\n");
  auto shell = run_process({test::capsa_binary(), "shell", busybox()}, "echo from-shell\n", 60);
  EXPECT_EQ(shell.out, "from-shell\n") << shell.err;
  auto tested = capsa({"test", busybox()});
  EXPECT_EQ(tested.exit_code, 0) << "an image without a test script passes";
}

TEST(Launch, NothingIsLeftBehind) {
  // A private copy, so that this container's server and loop device can be told apart
  // from those of other suites running at the same time.
  test::TempDir dir;
  std::string image = dir / "leak-check.sif";
  ASSERT_EQ(run_process({"cp", busybox(), image}).exit_code, 0);
  std::string before = mount_table();
  auto result = capsa({"exec", image, "true"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(mount_table(), before) << "no mount leaks into the caller's namespace";
  for (int i = 0; i < 50 && testing::fuse_servers_for(image) > 0; ++i) ::usleep(100000);
  EXPECT_EQ(testing::fuse_servers_for(image), 0) << "the FUSE server died with the container";
  if (::geteuid() == 0) {
    auto loops = run_process({"losetup", "-j", image});
    EXPECT_EQ(loops.out, "") << "the loop device was released";
  }
}

TEST(Launch, UnprivilegedBindsWorkWithHostMountsBelowTheSource) {
  // A mount on the host below a bound directory (another user's FUSE mount under /tmp) is
  // locked in the container's user namespace, and a plain bind of the directory fails
  // there with EINVAL: every rank of a node would fail while such a mount exists. Root
  // makes the host mount; the container runs as the test user.
  if (::geteuid() != 0) GTEST_SKIP() << "root makes the host mount (the .root run covers it)";
  if (!test::test_user()) GTEST_SKIP() << "no unprivileged test user";
  test::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  std::string below = dir / "host-mount";
  ASSERT_EQ(::mkdir(below.c_str(), 0755), 0);
  ASSERT_EQ(run_process({"mount", "-t", "tmpfs", "-o", "mode=0755", "capsa-test-below", below}).exit_code, 0);
  ASSERT_EQ(run_process({"sh", "-c", "echo from-the-host-mount > \"$0\"/file", below}).exit_code, 0);
  auto result = run_process({"setpriv", "--reuid=" + test::test_user()->name, "--regid=" + test::test_user()->name,
                             "--init-groups", test::capsa_binary(), "exec", "-B", dir.path() + ":/data", busybox(),
                             "cat", "/data/host-mount/file"});
  run_process({"umount", below});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "from-the-host-mount\n") << result.err;
}

// A container killed outright (no chance to clean up) takes its FUSE server along,
// whichever server it is; as root, its loop device goes too.
TEST(Launch, NothingIsLeftWhenTheContainerIsKilled) {
  for (const char* server : {"builtin", "squashfuse"}) {
    test::TempDir dir;
    std::string image = dir / "killed.sif";
    ASSERT_EQ(run_process({"cp", busybox(), image}).exit_code, 0);
    std::string before = mount_table();
    auto result = run_process({"env", std::string("CAPSA_FUSE=") + server, test::capsa_binary(), "exec", image, "sh",
                               "-c", "kill -9 $$"},
                              "", 60);
    EXPECT_EQ(result.signal, SIGKILL) << server << ": " << result.err;
    EXPECT_EQ(mount_table(), before) << server;
    for (int i = 0; i < 50 && testing::fuse_servers_for(image) > 0; ++i) ::usleep(100000);
    EXPECT_EQ(testing::fuse_servers_for(image), 0) << server << ": the FUSE server died with the container";
    if (::geteuid() == 0) {
      auto loops = run_process({"losetup", "-j", image});
      EXPECT_EQ(loops.out, "") << "the loop device was released";
    }
  }
}

// SIGTERM/SIGINT reach the container's whole process group (Ctrl-C, a batch system's
// scancel): the container decides whether to end, and its files must stay readable
// meanwhile. Here the container signals the FUSE server itself (capsa, named by this
// run's private image in its command line; no watcher stands between it and the
// container), then reads a file not yet read. squashfuse_ll would exit (libfuse's handlers)
// and the read fail with ENOTCONN.
TEST(Launch, TheFuseServerOutlivesTerminationSignals) {
  if (const char* kernel = std::getenv("CAPSA_TEST_KERNEL"); kernel != nullptr && std::string(kernel) == "4.18")
    GTEST_SKIP() << "before Linux 5.11 a user namespace's root is fuse-overlayfs, which ends on SIGTERM as every "
                    "libfuse program does";
  test::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const std::string image = dir.path() + "/signalled.sif";
  ASSERT_EQ(test::run_process({"cp", busybox(), image}).exit_code, 0);
  // --userns: root too mounts with FUSE, so that there is a server to signal.
  const std::string signal_the_servers =
      "n=0; for p in /proc/[0-9]*; do [ \"${p#/proc/}\" = $$ ] && continue; "
      "tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q \"exec --userns $0 \" || continue; "
      "kill -TERM ${p#/proc/} && kill -INT ${p#/proc/} && kill -HUP ${p#/proc/} && n=$((n+1)); "
      "done 2>/dev/null; sleep 1; echo \"signalled $n\"; wc -c < /.singularity.d/labels.json";
  auto result = capsa({"exec", "--userns", image, "sh", "-c", signal_the_servers, image});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "signalled 1\n347\n") << result.err;
}

// Some commands wait for every child they have before they end (busybox tar does): the
// image's FUSE server must be none of them, or they would wait for it forever.
TEST(Launch, ACommandThatWaitsForEveryChildEnds) {
  test::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  std::filesystem::create_directories(dir.path() + "/tree/pkg");
  for (int i = 0; i < 2000; ++i) dir.write("tree/pkg/m" + std::to_string(i) + ".py", "x = 1\n");
  ASSERT_EQ(test::run_process({"tar", "-C", dir.path() + "/tree", "-cf", dir.path() + "/tree.tar", "."}).exit_code, 0);
  ASSERT_EQ(::chmod((dir.path() + "/tree.tar").c_str(), 0644), 0);
  auto result =
      capsa({"exec", "--userns", busybox(), "sh", "-c",
             "mkdir /tmp/unpacked-$$ && busybox tar -xf " + dir.path() +
                 "/tree.tar -C /tmp/unpacked-$$ && ls /tmp/unpacked-$$/pkg | wc -l; rm -rf /tmp/unpacked-$$"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "2000\n") << result.err;
}

TEST(Launch, BadImagesGiveOneClearLine) {
  test::TempDir dir;
  std::string junk = dir.write("junk.sif", std::string(4096, 'x'));
  auto result = capsa({"exec", junk, "true"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "capsa: error: " + junk + ": not a SIF image (no SIF_MAGIC at byte 32)\n");
  auto ext3 = capsa({"exec", test::sif_fixture("images/one-group-signed-legacy.sif"), "true"});
  EXPECT_EQ(ext3.exit_code, 1);
  EXPECT_NE(ext3.err.find("not squashfs"), std::string::npos) << ext3.err;
  auto missing = capsa({"exec", dir / "missing.sif", "true"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace capsa::runtime
