// -f/--fakeroot on exec/run/shell/test (docs/fakeroot.md), in every mode this machine
// offers the caller: subordinate ids (the test user's /etc/subuid range), the emulated
// root (--ignore-subuid, or CAPSA_FAKEROOT_MODE=emulated) and the single mapped id
// (--ignore-subuid --ignore-fakeroot-command). Root has no range here: it gets the
// emulated and single modes in a user namespace of its own. The apt-get tests install a
// package from the Debian mirror into the Debian test image (pulled from the test
// registry): into a --writable sandbox, where it stays, and under --writable-tmpfs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/root_mode.hpp"
#include "runtime/run_support.hpp"
#include "runtime/sandbox_run.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

enum class Mode { subid, emulated, single };

std::vector<Mode> modes_here() {
  std::vector<Mode> modes;
  if (::geteuid() != 0 && resolve_root_mode(RootMode::fakeroot_auto) == RootMode::fakeroot_subid)
    modes.push_back(Mode::subid);
  modes.push_back(Mode::emulated);
  modes.push_back(Mode::single);
  return modes;
}

std::string mode_label(Mode mode) {
  switch (mode) {
    case Mode::subid:
      return "subid";
    case Mode::emulated:
      return "emulated";
    case Mode::single:
      return "single";
  }
  return "?";
}

// The flags that ask for `mode` (subid is what --fakeroot alone gives the test user).
std::vector<std::string> fakeroot_flags(Mode mode) {
  switch (mode) {
    case Mode::subid:
      return {"--fakeroot"};
    case Mode::emulated:
      return {"--fakeroot", "--ignore-subuid"};
    case Mode::single:
      return {"--fakeroot", "--ignore-subuid", "--ignore-fakeroot-command"};
  }
  return {};
}

// The same mode for `capsa build --sandbox` (the sandbox's owners must be the mode's).
std::vector<std::string> build_env(Mode mode) {
  if (::geteuid() == 0) return {};
  return {std::string("CAPSA_FAKEROOT_MODE=") + (mode == Mode::subid ? "subid" : "emulated")};
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

uid_t owner_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return static_cast<uid_t>(-1);
  return st.st_uid;
}

class FakerootAction : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { ASSERT_EQ(::chdir(dir.path().c_str()), 0); }  // under /tmp: no cwd bind
  void TearDown() override { ASSERT_EQ(::chdir("/"), 0); }

  test::ProcessResult run(const std::vector<std::string>& flags, const std::string& image, const std::string& script,
                          const std::vector<std::string>& env = {}) {
    std::vector<std::string> args = {"exec"};
    for (const auto& f : fakeroot_flags(GetParam())) args.push_back(f);
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {image, "sh", "-c", script});
    return capsa(args, env);
  }

  test::TempDir dir;
};

TEST_P(FakerootAction, IdIsRootAndTheIdMapIsTheModes) {
  auto r = run({}, testing::busybox_sif(), "id; cat /proc/self/uid_map /proc/self/gid_map");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = testing::lines_of(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0].rfind("uid=0(root) gid=0(root)", 0), 0u) << lines[0];
  const std::string uid = std::to_string(::getuid()), gid = std::to_string(::getgid());
  std::vector<std::string> maps(lines.begin() + 1, lines.end());
  if (GetParam() == Mode::subid) {
    auto subuid = caller_subid_range("/etc/subuid"), subgid = caller_subid_range("/etc/subgid");
    ASSERT_TRUE(subuid && subgid);
    ASSERT_EQ(maps.size(), 4u) << r.out;
    EXPECT_EQ(words(maps[0]), (std::vector<std::string>{"0", uid, "1"}));
    EXPECT_EQ(words(maps[1]),
              (std::vector<std::string>{"1", std::to_string(subuid->start), std::to_string(subuid->count)}));
    EXPECT_EQ(words(maps[2]), (std::vector<std::string>{"0", gid, "1"}));
    EXPECT_EQ(words(maps[3]),
              (std::vector<std::string>{"1", std::to_string(subgid->start), std::to_string(subgid->count)}));
  } else {
    ASSERT_EQ(maps.size(), 2u) << r.out;
    EXPECT_EQ(words(maps[0]), (std::vector<std::string>{"0", uid, "1"}));
    EXPECT_EQ(words(maps[1]), (std::vector<std::string>{"0", gid, "1"}));
  }
  EXPECT_EQ(r.err, "");
}

TEST_P(FakerootAction, RunShellAndTestRunAsRootToo) {
  std::string sif = testing::make_image(dir, "scripts",
                                        {{"/.singularity.d/runscript", "#!/bin/sh\nid -u\n", 0755},
                                         {"/.singularity.d/test", "#!/bin/sh\nid -g\n", 0755}});
  std::vector<std::string> flags = fakeroot_flags(GetParam());
  auto with = [&](const std::string& action) {
    std::vector<std::string> args = {action};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(sif);
    return args;
  };
  EXPECT_EQ(capsa(with("run")).out, "0\n");
  EXPECT_EQ(capsa(with("test")).out, "0\n");
  EXPECT_EQ(capsa(with("shell"), {}, "id -un\n").out, "root\n");
}

TEST_P(FakerootAction, TheHomeIsBoundOnRoot) {
  testing::HomeDir home;
  auto r = run({}, testing::busybox_sif(), "echo $HOME; cat /root/marker; stat -c %u:%g /root/marker; pwd",
               {"HOME=" + home.path()});
  EXPECT_EQ(r.out, "/root\nhost home\n0:0\n" + dir.path() + "\n") << r.err;
  // --contain: root's home is an empty directory, as any contained home.
  r = run({"--contain"}, testing::busybox_sif(), "echo $HOME; ls -A /root | wc -l; pwd", {"HOME=" + home.path()});
  EXPECT_EQ(r.out, "/root\n0\n/root\n") << r.err;
  // --home SRC:DEST wins, as in Apptainer.
  r = run({"--home", home.path() + ":/home/elsewhere"}, testing::busybox_sif(),
          "echo $HOME; cat /home/elsewhere/marker");
  EXPECT_EQ(r.out, "/home/elsewhere\nhost home\n") << r.err;
}

TEST_P(FakerootAction, TheCallersFilesAreRootsAndChownFollowsTheMode) {
  std::string data = dir / "data";
  std::filesystem::create_directories(data);
  dir.write("data/f", "mine\n");
  auto r = run({"-B", data + ":/data"}, testing::busybox_sif(),
               "stat -c %u:%g /data/f; chown 1234:1234 /data/f 2>/dev/null && echo chowned || echo refused");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  switch (GetParam()) {
    case Mode::subid: {
      EXPECT_EQ(r.out, "0:0\nchowned\n");
      auto subuid = caller_subid_range("/etc/subuid");
      ASSERT_TRUE(subuid);
      EXPECT_EQ(owner_of(data + "/f"), subuid->start + 1233) << "container uid 1234 is range start + 1233";
      // And back: uid 1234 inside reads as 1234.
      auto back = run({"-B", data + ":/data"}, testing::busybox_sif(), "stat -c %u /data/f; chown 0:0 /data/f");
      EXPECT_EQ(back.out, "1234\n") << back.err;
      break;
    }
    case Mode::emulated:
      EXPECT_EQ(r.out, "0:0\nchowned\n") << "the emulation pretends";
      EXPECT_EQ(owner_of(data + "/f"), ::getuid());
      break;
    case Mode::single:
      EXPECT_EQ(r.out, "0:0\nrefused\n") << "uid 1234 is not mapped";
      EXPECT_EQ(owner_of(data + "/f"), ::getuid());
      break;
  }
  EXPECT_EQ(owner_of(data + "/f"), ::getuid());
}

TEST_P(FakerootAction, CombinesWithContainPidNetworkNoneAndBinds) {
  std::string data = dir / "data";
  std::filesystem::create_directories(data);
  dir.write("data/f", "bound\n");
  std::string before = testing::mount_table();
  auto r = run({"--contain", "--pid", "--net", "--network", "none", "-B", data + ":/data:ro", "--hostname", "box"},
               testing::busybox_sif(),
               "id -u; test $$ -le 2 && echo own-pids; cat /data/f; grep -c : /proc/net/dev; hostname; "
               "touch /data/g 2>/dev/null || echo read-only");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "0\nown-pids\nbound\n1\nbox\nread-only\n") << r.err;  // /proc/net/dev: lo alone
  EXPECT_EQ(testing::mount_table(), before);
}

TEST_P(FakerootAction, AWritableSandboxGetsTheCallersFilesAndKeepsItsPasswd) {
  std::string sandbox = testing::make_busybox_sandbox(dir);
  auto r = run({"--writable"}, sandbox,
               "touch /made && mkdir /opt && echo 'svc:x:5:5::/:/bin/sh' >> /etc/passwd && id -un && echo $HOME");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "root\n/root\n");
  EXPECT_EQ(owner_of(sandbox + "/made"), ::getuid()) << "uid 0 inside is the caller";
  EXPECT_EQ(owner_of(sandbox + "/opt"), ::getuid());
  // Root in a writable container writes the image's /etc/passwd (no generated one on it).
  EXPECT_EQ(test::read_file(sandbox + "/etc/passwd"), "root:x:0:0:root:/root:/bin/sh\nsvc:x:5:5::/:/bin/sh\n");
  // Read-only, the generated one is there: the image's root entry, with root's home.
  auto ro = run({}, sandbox, "grep ^root: /etc/passwd");
  EXPECT_EQ(ro.out, "root:x:0:0:root:/root:/bin/sh\n") << ro.err;
}

INSTANTIATE_TEST_SUITE_P(Modes, FakerootAction, ::testing::ValuesIn(modes_here()),
                         [](const auto& param_info) { return mode_label(param_info.param); });

TEST(FakerootFlags, TheEnvironmentVariablesActLikeTheFlag) {
  for (const char* var : {"APPTAINER_FAKEROOT=1", "SINGULARITY_FAKEROOT=true"}) {
    auto r = capsa({"exec", testing::busybox_sif(), "id", "-u"}, {var});
    EXPECT_EQ(r.out, "0\n") << var << ": " << r.err;
  }
  auto r =
      capsa({"exec", "--fakeroot", testing::busybox_sif(), "cat", "/proc/self/uid_map"}, {"APPTAINER_IGNORE_SUBUID=1"});
  EXPECT_EQ(words(r.out), (std::vector<std::string>{"0", std::to_string(::getuid()), "1"})) << r.err;
  r = capsa({"exec", "--fakeroot", testing::busybox_sif(), "cat", "/proc/self/uid_map"},
            {"CAPSA_FAKEROOT_MODE=emulated"});
  EXPECT_EQ(words(r.out), (std::vector<std::string>{"0", std::to_string(::getuid()), "1"})) << r.err;
}

TEST(FakerootFlags, AnUnknownModeIsRefusedInOneLine) {
  std::string before = testing::mount_table();
  auto r = capsa({"exec", "--fakeroot", testing::busybox_sif(), "true"}, {"CAPSA_FAKEROOT_MODE=magic"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "capsa: error: CAPSA_FAKEROOT_MODE=\"magic\" is not a fakeroot mode (expected subid, emulated or auto)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(testing::mount_table(), before);
}

TEST(FakerootFlags, WithoutRangesSubidIsRefusedInOneLine) {
  if (resolve_root_mode(RootMode::fakeroot_auto) == RootMode::fakeroot_subid)
    GTEST_SKIP() << "this caller has subordinate ids";
  auto r = capsa({"exec", "--fakeroot", testing::busybox_sif(), "true"}, {"CAPSA_FAKEROOT_MODE=subid"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("capsa: error: fakeroot with subordinate ids: "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// --ignore-userns (Apptainer's): no user namespace. Root runs in the host's (its uid map
// is the whole range) even with --userns or --fakeroot; anyone else needs one, and is
// told so in one line before anything is mounted.
TEST(FakerootFlags, IgnoreUsernsRunsRootWithoutAUserNamespace) {
  const std::vector<std::string> host_map = {"0", "0", "4294967295"};
  if (::geteuid() != 0) {
    std::string before = testing::mount_table();
    for (const std::vector<std::string>& env : {std::vector<std::string>{}, {"APPTAINER_IGNORE_USERNS=1"}}) {
      std::vector<std::string> args = {"exec"};
      if (env.empty()) args.emplace_back("--ignore-userns");
      args.insert(args.end(), {testing::busybox_sif(), "true"});
      auto r = capsa(args, env);
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_NE(r.err.find("--ignore-userns: an unprivileged container needs a user namespace"), std::string::npos)
          << r.err;
    }
    EXPECT_EQ(testing::mount_table(), before);
    return;
  }
  for (const char* flag : {"--userns", "--fakeroot"}) {
    auto in_namespace = capsa({"exec", flag, testing::busybox_sif(), "cat", "/proc/self/uid_map"});
    ASSERT_EQ(in_namespace.exit_code, 0) << in_namespace.err;
    EXPECT_NE(words(in_namespace.out), host_map) << flag << " made no user namespace: the check proves nothing";
    auto ignored = capsa({"exec", flag, "--ignore-userns", testing::busybox_sif(), "cat", "/proc/self/uid_map"});
    ASSERT_EQ(ignored.exit_code, 0) << ignored.err;
    EXPECT_EQ(words(ignored.out), host_map) << flag;
    auto from_env =
        capsa({"exec", flag, testing::busybox_sif(), "cat", "/proc/self/uid_map"}, {"APPTAINER_IGNORE_USERNS=1"});
    EXPECT_EQ(words(from_env.out), host_map) << flag << from_env.err;
  }
}

// apt-get from the Debian mirror the image's sources name (deb.debian.org, which this
// machine's apt uses too), as root-in-the-container.
class FakerootApt : public ::testing::TestWithParam<Mode> {
 protected:
  static void SetUpTestSuite() {
    images = new test::TempDir();
    std::string sif = *images / "debian.sif";
    auto pulled =
        capsa({"pull", "--nohttps", sif, "docker://" + test::test_registry().plain + "/public/debian:bookworm"},
              {"CAPSA_CACHEDIR=" + (*images / "cache")});
    if (pulled.exit_code == 0)
      debian_sif = sif;
    else
      std::cerr << "pulling the Debian image failed: " << pulled.err;
  }
  static void TearDownTestSuite() {
    delete images;
    images = nullptr;
  }

  void SetUp() override {
    ASSERT_FALSE(debian_sif.empty()) << "no Debian image";
    // A quick HEAD of the mirror first: only a machine that cannot reach it skips.
    auto head =
        test::run_process({"curl", "-sfI", "--max-time", "20", std::string(kMirror) + "/dists/bookworm/InRelease"});
    if (head.exit_code != 0) GTEST_SKIP() << "the Debian mirror " << kMirror << " is not reachable from this machine";
    ASSERT_EQ(::chdir(work.path().c_str()), 0);
  }
  void TearDown() override {
    ASSERT_EQ(::chdir("/"), 0);
    // Files owned by subordinate ids are removed from inside the namespace.
    if (std::filesystem::exists(sandbox))
      remove_sandbox(sandbox, GetParam() == Mode::subid ? RootMode::fakeroot_subid : RootMode::fakeroot_emulated);
  }

  // The Debian image as a sandbox owned as the mode owns files.
  void make_sandbox() {
    auto built = capsa({"build", "--sandbox", sandbox, debian_sif}, build_env(GetParam()));
    ASSERT_EQ(built.exit_code, 0) << built.err;
  }

  test::ProcessResult exec(const std::vector<std::string>& flags, const std::string& image, const std::string& script) {
    std::vector<std::string> args = {"exec"};
    for (const auto& f : fakeroot_flags(GetParam())) args.push_back(f);
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {image, "sh", "-c", script});
    auto r = capsa(args, {"DEBIAN_FRONTEND=noninteractive"});
    return r;
  }

  static constexpr const char* kMirror = "http://deb.debian.org/debian";
  // Small lists, kept compressed, no binary caches: all of it fits the 64 MiB tmpfs.
  static constexpr const char* kApt =
      "apt-get -q -o Acquire::GzipIndexes=true -o Acquire::Languages=none -o Dir::Cache::pkgcache= "
      "-o Dir::Cache::srcpkgcache=";
  static inline test::TempDir* images = nullptr;
  static inline std::string debian_sif;
  test::TempDir work;
  std::string sandbox = work / "debian";
};

TEST_P(FakerootApt, AptGetInstallIntoAWritableSandboxStays) {
  make_sandbox();
  ASSERT_FALSE(HasFatalFailure());
  std::string apt = kApt;
  auto r = exec({"--writable"}, sandbox,
                apt + " update > /apt.log 2>&1 || { cat /apt.log; exit 1; }; " + apt +
                    " install -y --no-install-recommends hello > /apt.log 2>&1 || { cat /apt.log; exit 2; }; "
                    "hello");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "Hello, world!\n");
  // The next run, fakeroot or not, has it.
  auto again = exec({}, sandbox, "hello; dpkg -s hello | grep ^Status; stat -c %u:%g /usr/bin/hello");
  EXPECT_EQ(again.out, "Hello, world!\nStatus: install ok installed\n0:0\n") << again.err;
  auto plain = capsa({"exec", sandbox, "hello"});
  EXPECT_EQ(plain.out, "Hello, world!\n") << plain.err;
}

TEST_P(FakerootApt, AptGetInstallUnderWritableTmpfsIsGoneAfterwards) {
  std::string apt = kApt;
  auto r = exec({"--writable-tmpfs"}, debian_sif,
                apt + " update > /apt.log 2>&1 || { cat /apt.log; exit 1; }; " + apt +
                    " install -y --no-install-recommends sl > /apt.log 2>&1 || { cat /apt.log; exit 2; }; "
                    "test -x /usr/games/sl && echo installed");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "installed\n");
  auto again = exec({}, debian_sif, "test -e /usr/games/sl && echo still-there || echo gone");
  EXPECT_EQ(again.out, "gone\n") << again.err;
}

std::vector<Mode> apt_modes_here() {
  std::vector<Mode> modes = modes_here();
  std::erase(modes, Mode::single);  // apt cannot switch users with one id (as Apptainer's mode 2)
  return modes;
}

INSTANTIATE_TEST_SUITE_P(Modes, FakerootApt, ::testing::ValuesIn(apt_modes_here()),
                         [](const auto& param_info) { return mode_label(param_info.param); });

}  // namespace
}  // namespace capsa::runtime
