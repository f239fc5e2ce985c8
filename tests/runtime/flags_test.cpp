// The action flags of issue 4 item 4 (except --writable and --no-mount), each checked
// from inside the container against the meaning Apptainer gives it
// (docs/running.md). Root and test user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;
using testing::lines_of;

TEST(Flags, BindTakesCommaListsAndRepeats) {
  test::TempDir a, b, c;
  a.write("f", "a\n");
  b.write("f", "b\n");
  c.write("f", "c\n");
  auto result = capsa({"exec", "-B", a.path() + ":/data/a," + b.path() + ":/data/b:ro", "--bind", c.path(),
                       busybox_sif(), "sh", "-c",
                       "cat /data/a/f /data/b/f " + c.path() + "/f;"
                       " touch /data/a/new && echo A-RW; touch /data/b/new 2>/dev/null || echo B-RO"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "a\nb\nc\nA-RW\nB-RO\n");
  EXPECT_TRUE(std::filesystem::exists(a / "new"));
}

TEST(Flags, BindRwOptionAndSourceOnlyForm) {
  test::TempDir a;
  auto result = capsa({"exec", "-B", a.path() + ":/rw:rw", busybox_sif(), "sh", "-c", "echo w > /rw/f && cat /rw/f"});
  EXPECT_EQ(result.out, "w\n") << result.err;
  EXPECT_EQ(test::read_file(a / "f"), "w\n");
}

TEST(Flags, MountIsCsvAndNeedsNoType) {
  test::TempDir a, b;
  std::filesystem::create_directory(a / "with,comma");
  a.write("with,comma/f", "comma\n");
  b.write("f", "b\n");
  // No type= is a bind, as in Apptainer; a quoted field keeps its comma; APPTAINER_MOUNT
  // holds a mount per line and comes before the flags.
  auto result = capsa({"exec", "--mount", "\"src=" + (a / "with,comma") + "\",dst=/data/c,ro", busybox_sif(), "sh", "-c",
                       "cat /data/c/f /env/one/f /env/two/f; touch /data/c/new 2>/dev/null || echo RO; echo \"$APPTAINER_BIND\""},
                      {"APPTAINER_MOUNT=src=" + b.path() + ",dst=/env/one\nsrc=" + b.path() + ",target=/env/two"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "comma\nb\nb\nRO\n" + b.path() + ":/env/one:rw," + b.path() + ":/env/two:rw," + a.path() +
                            "/with\\,comma:/data/c:ro\n");
  auto bad = capsa({"exec", "--mount", "src=/a,dst=/b,size=1", busybox_sif(), "true"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "capsa: error: invalid bind \"src=/a,dst=/b,size=1\": unknown key \"size\"\n");
}

TEST(Flags, BindsFromApptainerAndSingularityBindAddToTheFlags) {
  test::TempDir env_dir, flag_dir, legacy_dir;
  env_dir.write("f", "env\n");
  flag_dir.write("f", "flag\n");
  legacy_dir.write("f", "legacy\n");
  auto both = capsa({"exec", "-B", flag_dir.path() + ":/from-flag", busybox_sif(), "sh", "-c",
                     "cat /from-env/f /from-flag/f; echo \"$APPTAINER_BIND\"; test -e /from-legacy || echo no-legacy"},
                    {"APPTAINER_BIND=" + env_dir.path() + ":/from-env:ro", "SINGULARITY_BIND=" + legacy_dir.path() + ":/from-legacy"});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  // APPTAINER_BIND wins over SINGULARITY_BIND; inside, APPTAINER_BIND lists every bind
  // so that a nested run repeats them.
  EXPECT_EQ(both.out, "env\nflag\n" + env_dir.path() + ":/from-env:ro," + flag_dir.path() + ":/from-flag:rw\nno-legacy\n");
  auto legacy = capsa({"exec", busybox_sif(), "cat", "/from-legacy/f"}, {"SINGULARITY_BINDPATH=" + legacy_dir.path() + ":/from-legacy"});
  EXPECT_EQ(legacy.out, "legacy\n") << legacy.err;
}

TEST(Flags, UserBindsGoOverSystemMountsAndParentsFirst) {
  test::TempDir a, b, host_tmp_dir;
  a.write("f", "a\n");
  b.write("f", "b\n");
  host_tmp_dir.write("f", "tmp\n");
  std::filesystem::create_directory(b / "y");
  // Given child first: the parent must still be mounted first, or it would hide the child.
  auto result = capsa({"exec", "-B", a.path() + ":/x/y", "-B", b.path() + ":/x", "-B", host_tmp_dir.path() + ":" +
                       host_tmp_dir.path() + ":ro", busybox_sif(), "sh", "-c",
                       "cat /x/y/f /x/f " + (host_tmp_dir / "f") + "; touch " + (host_tmp_dir / "new") + " 2>/dev/null || echo RO"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "a\nb\ntmp\nRO\n") << "a read-only bind below /tmp stays read-only";
}

TEST(Flags, BindTargetsMissingInTheImageAreCreated) {
  test::TempDir dir;
  dir.write("file", "a file\n");
  std::filesystem::create_directory(dir / "sub");
  auto result = capsa({"exec", "-B", (dir / "sub") + ":/not/in/the/image", "-B", (dir / "file") + ":/opt/file.txt",
                       busybox_sif(), "sh", "-c",
                       "cat /opt/file.txt; echo deep > /not/in/the/image/x; stat -c %F /not/in/the/image /opt/file.txt"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "a file\ndirectory\nregular file\n");
  EXPECT_EQ(test::read_file(dir / "sub/x"), "deep\n");
}

TEST(Flags, ContainGivesEmptyTmpVarTmpHomeAndAMinimalDev) {
  testing::HomeDir home;  // not under /tmp, which --contain replaces
  std::string host_shm_file = "/dev/shm/capsa-contain-" + std::to_string(::getpid());
  test::run_process({"touch", host_shm_file});
  // Started in the build tree, which --contain does not bind: the command starts in home.
  auto result = capsa({"exec", "--contain", busybox_sif(), "sh", "-c",
                       "ls -A /tmp /var/tmp \"$HOME\" /dev/shm | grep -v : | grep -c . ; echo \"$HOME\"; pwd;"
                       " test -c /dev/null && test -c /dev/zero && test -c /dev/urandom && echo devices;"
                       " test -e /dev/loop-control || echo no-host-devices; echo x > \"$HOME\"/w && echo home-writable;"
                       " md5sum /etc/hosts; readlink /dev/ptmx; stat -c %F /dev/pts/ptmx"},
                      {"HOME=" + home.path()}, "", testing::test_binary_directory());
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::string hosts = test::run_process({"md5sum", "/etc/hosts"}).out;
  // A devpts instance of its own, and /dev/ptmx pointing into it, so ptys can be opened.
  EXPECT_EQ(result.out, "0\n" + home.path() + "\n" + home.path() + "\ndevices\nno-host-devices\nhome-writable\n" + hosts +
                            "pts/ptmx\ncharacter special file\n");
  EXPECT_FALSE(std::filesystem::exists(home.path() + "/w")) << "the contained home is not the host's";
  std::filesystem::remove(host_shm_file);
}

TEST(Flags, ContainallAddsPidAndIpcNamespacesAndCleanenv) {
  auto result = capsa({"exec", "--containall", busybox_sif(), "sh", "-c",
                       "for ns in pid ipc net; do readlink /proc/self/ns/$ns; done; echo \"[$CAPSA_HOST_ONLY]\";"
                       " echo $$; ls /proc | grep -c '^[0-9]'"},
                      {"CAPSA_HOST_ONLY=visible"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 6u) << result.out;
  EXPECT_NE(lines[0], testing::own_namespace("pid"));
  EXPECT_NE(lines[1], testing::own_namespace("ipc"));
  EXPECT_EQ(lines[2], testing::own_namespace("net")) << "the network stays the host's";
  EXPECT_EQ(lines[3], "[]") << "--containall implies --cleanenv";
  // A shim init is PID 1; the command comes next, and /proc shows the namespace only.
  EXPECT_EQ(lines[4], "2");
  EXPECT_LT(std::stoi(lines[5]), 6) << "the namespace's own /proc";
}

TEST(Flags, ContainallKeepsTheExitStatus) {
  auto result = capsa({"exec", "--containall", busybox_sif(), "sh", "-c", "exit 42"});
  EXPECT_EQ(result.exit_code, 42) << result.err;
}

TEST(Flags, NoHomeLeavesHomeOutButKeepsTheWorkingDirectory) {
  // A home outside /tmp and /var/tmp (bound anyway): a folder in the caller's real home.
  testing::HomeDir home;
  auto unbound = capsa({"exec", "--no-home", busybox_sif(), "sh", "-c", "echo \"$HOME\"; cat \"$HOME\"/marker 2>/dev/null || echo unbound"},
                       {"HOME=" + home.path()});
  EXPECT_EQ(unbound.exit_code, 0) << unbound.err;
  EXPECT_EQ(unbound.out, home.path() + "\nunbound\n") << "HOME is still set, the folder is not there";
  auto bound = capsa({"exec", busybox_sif(), "cat", home.path() + "/marker"}, {"HOME=" + home.path()});
  EXPECT_EQ(bound.out, "host home\n") << bound.err;
  // Apptainer: --no-home still binds the working directory, even when it is the home.
  auto in_home = test::run_process({"sh", "-c", "cd \"$1\" && exec env HOME=\"$1\" \"$2\" exec --no-home \"$3\" sh -c 'pwd; cat marker'",
                                    "sh", home.path(), test::capsa_binary(), busybox_sif()});
  EXPECT_EQ(in_home.out, home.path() + "\nhost home\n") << in_home.err;
}

TEST(Flags, HomeSourceAndDestination) {
  test::TempDir alt;
  alt.write("marker", "alt home\n");
  auto moved = capsa({"exec", "--home", alt.path() + ":/home/elsewhere", busybox_sif(), "sh", "-c",
                      "echo \"$HOME\"; cat /home/elsewhere/marker; grep -c ':/home/elsewhere:' /etc/passwd"});
  EXPECT_EQ(moved.exit_code, 0) << moved.err;
  EXPECT_EQ(moved.out, "/home/elsewhere\nalt home\n1\n");
  auto same = capsa({"exec", "-H", alt.path(), busybox_sif(), "sh", "-c", "echo \"$HOME\"; cat ~/marker"});
  EXPECT_EQ(same.out, alt.path() + "\nalt home\n") << same.err;
  // An explicit --home is bound even with --contain (Apptainer's custom home).
  auto contained = capsa({"exec", "--contain", "--home", alt.path() + ":/home/c", busybox_sif(), "cat", "/home/c/marker"});
  EXPECT_EQ(contained.out, "alt home\n") << contained.err;
}

TEST(Flags, PwdSetsTheStartingDirectory) {
  auto result = capsa({"exec", "--pwd", "/etc", busybox_sif(), "pwd"});
  EXPECT_EQ(result.out, "/etc\n") << result.err;
  auto cwd = capsa({"exec", "--cwd", "/usr", busybox_sif(), "pwd"});  // Apptainer's name for it since 1.1
  EXPECT_EQ(cwd.out, "/usr\n") << cwd.err;
  auto from_env = capsa({"exec", busybox_sif(), "pwd"}, {"APPTAINER_PWD=/bin"});
  EXPECT_EQ(from_env.out, "/bin\n") << from_env.err;
  auto missing = capsa({"exec", "--pwd", "/no/such/dir", busybox_sif(), "pwd"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("/no/such/dir"), std::string::npos) << missing.err;
}

TEST(Flags, ShellFlagChoosesTheShell) {
  // The program given runs with the arguments after IMAGE, and sees itself in APPTAINER_SHELL.
  auto echo = capsa({"shell", "--shell", "/bin/echo", busybox_sif(), "hello", "there"});
  EXPECT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "hello there\n");
  auto sh = capsa({"shell", "-s", "/bin/sh", busybox_sif()}, {}, "echo in $APPTAINER_SHELL\n");
  EXPECT_EQ(sh.out, "in /bin/sh\n") << sh.err;
  auto from_env = capsa({"shell", busybox_sif(), "from-env"}, {"APPTAINER_SHELL=/bin/echo"});
  EXPECT_EQ(from_env.out, "from-env\n") << from_env.err;
}

TEST(Flags, NoRocmIsAcceptedAndChangesNothing) {
  // capsa brings in no ROCm driver unless asked (--rocm, APPTAINER_ROCM), so --no-rocm
  // alone has nothing to undo (tests/gpu/rocm_exec_test.cpp: what it undoes).
  auto result = capsa({"exec", "--no-rocm", busybox_sif(), "sh", "-c", "ls /.singularity.d/libs 2>/dev/null | wc -l"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "0\n");
}

TEST(Flags, WorkdirBacksTmpVarTmpAndHomeUnderContain) {
  test::TempDir work;
  testing::HomeDir home;  // not under /tmp, which the work directory's tmp replaces
  auto result = capsa({"exec", "--contain", "--workdir", work.path(), busybox_sif(), "sh", "-c",
                       "echo t > /tmp/t; echo v > /var/tmp/v; echo h > \"$HOME\"/h; stat -c %a /tmp /var/tmp"},
                      {"HOME=" + home.path()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "1777\n1777\n");
  EXPECT_EQ(test::read_file(work / "tmp/t"), "t\n");
  EXPECT_EQ(test::read_file(work / "var_tmp/v"), "v\n");
  EXPECT_EQ(test::read_file(work / "home/h"), "h\n");
  // Without --contain the host's /tmp is used and the work directory stays empty.
  test::TempDir unused;
  auto plain = capsa({"exec", "--workdir", unused.path(), busybox_sif(), "sh", "-c", "test -e " + (work / "tmp/t") + " && echo host-tmp"});
  EXPECT_EQ(plain.out, "host-tmp\n") << plain.err;
  EXPECT_TRUE(std::filesystem::is_empty(unused.path()));
}

TEST(Flags, WritableTmpfsLetsTheImageChangeForThisRunOnly) {
  auto rw = capsa({"exec", "--writable-tmpfs", busybox_sif(), "sh", "-c",
                   "grep ' / / ' /proc/self/mountinfo | cut -d' ' -f6 | tr , '\\n' | grep -x rw; touch /bin/added"});
  EXPECT_EQ(rw.out, "rw\n") << rw.err;
  if (::getuid() == 0) {
    EXPECT_EQ(rw.exit_code, 0) << rw.err;
    auto changed = capsa({"exec", "--writable-tmpfs", busybox_sif(), "sh", "-c",
                          "echo new > /bin/added && rm /bin/true && cat /bin/added && test ! -e /bin/true && echo removed"});
    EXPECT_EQ(changed.out, "new\nremoved\n") << changed.err;
  } else {
    // The image's /bin is root's: the test user may not write there, but the file system
    // is writable (EACCES), where without the flag it is read-only (EROFS).
    EXPECT_NE(rw.err.find("Permission denied"), std::string::npos) << rw.err;
    auto ro = capsa({"exec", busybox_sif(), "touch", "/bin/added"});
    EXPECT_NE(ro.err.find("Read-only file system"), std::string::npos) << ro.err;
  }
  auto after = capsa({"exec", busybox_sif(), "sh", "-c", "test ! -e /bin/added && test -e /bin/true && echo pristine"});
  EXPECT_EQ(after.out, "pristine\n");
}

TEST(Flags, UsernsPutsRootInAUserNamespace) {
  auto result = capsa({"exec", "-u", busybox_sif(), "sh", "-c", "id -u; cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //'; readlink /proc/self/ns/user"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out;
  std::string uid = std::to_string(::getuid());
  EXPECT_EQ(lines[0], uid);
  EXPECT_EQ(lines[1], uid + " " + uid + " 1") << "only the caller is mapped";
  EXPECT_NE(lines[2], testing::own_namespace("user"));
  auto from_env = capsa({"exec", busybox_sif(), "sh", "-c", "cat /proc/self/uid_map | tr -s ' ' | sed 's/^ //'"},
                        {"APPTAINER_USERNS=1"});
  EXPECT_EQ(from_env.out, uid + " " + uid + " 1\n") << from_env.err;
}

}  // namespace
}  // namespace capsa::runtime
