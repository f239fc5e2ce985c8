// The administrator's configuration seen from inside containers, as root and as an
// unprivileged user (runtime/site_policy.hpp, cli/site_config.hpp): each directive capsa
// acts on changes what the container sees or what capsa refuses, and a user's own file
// cannot loosen the administrator's.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "../runtime/run_support.hpp"
#include "site_prefix.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::config {
namespace {

using runtime::testing::busybox_sif;
using runtime::testing::capsa;
using testing::SitePrefix;

bool root() { return ::geteuid() == 0; }

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// The refusal of a run: exit 1, one line naming the directive and the file, nothing run.
void expect_refused(const test::ProcessResult& r, const std::string& directive, const std::string& file) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("`" + directive + "`"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
}

TEST(SitePolicy, BindPathBindsIntoEveryContainerUnlessNoMountBindPaths) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "site");
  dir.write("site/marker", "site data\n");
  std::string conf = dir.write("capsa.conf", "bind path = /etc/hosts\nbind path = " + (dir / "site") + ":/site-data\n");
  auto r = capsa({"-c", conf, "exec", busybox_sif(), "cat", "/site-data/marker"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "site data\n");
  r = capsa({"exec", busybox_sif(), "cat", "/site-data/marker"});
  EXPECT_NE(r.exit_code, 0) << "bound without the configuration";
  r = capsa({"-c", conf, "exec", "--no-mount", "bind-paths", busybox_sif(), "cat", "/site-data/marker"});
  EXPECT_NE(r.exit_code, 0) << "--no-mount bind-paths leaves it out";
  r = capsa({"-c", conf, "exec", "--contain", busybox_sif(), "cat", "/site-data/marker"});
  EXPECT_NE(r.exit_code, 0) << "--contain keeps only /etc/hosts and /etc/localtime";
  // A source missing on the host is skipped, not an error.
  std::string missing = dir.write("missing.conf", "bind path = /nonexistent/capsa-site:/x\n");
  r = capsa({"-c", missing, "exec", busybox_sif(), "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(SitePolicy, MountHomeNoBehavesLikeNoHome) {
  runtime::testing::HomeDir home;
  test::TempDir dir;
  std::string conf = dir.write("capsa.conf", "mount home = no\n");
  auto r = capsa({"exec", busybox_sif(), "cat", home.path() + "/marker"});
  EXPECT_EQ(r.out, "host home\n") << r.err;
  r = capsa({"-c", conf, "exec", busybox_sif(), "cat", home.path() + "/marker"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
}

TEST(SitePolicy, MountProcSysAndDevChangeTheSystemMounts) {
  test::TempDir dir;
  std::string conf = dir.write("capsa.conf", "mount proc = no\nmount sys = no\n");
  auto r =
      capsa({"-c", conf, "exec", busybox_sif(), "sh", "-c", "test -e /proc/self || test -e /sys/kernel || echo gone"});
  EXPECT_EQ(r.out, "gone\n") << r.err;
  r = capsa({"exec", busybox_sif(), "sh", "-c", "test -e /proc/self && test -e /sys/kernel && echo there"});
  EXPECT_EQ(r.out, "there\n") << r.err;
  // minimal: the --contain /dev (a handful of devices) without --contain.
  std::string minimal = dir.write("minimal.conf", "mount dev = minimal\n");
  r = capsa({"-c", minimal, "exec", busybox_sif(), "sh", "-c", "test -c /dev/null && ls /dev | wc -l"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(std::stoi(r.out), 12) << r.out;
  r = capsa({"exec", busybox_sif(), "sh", "-c", "ls /dev | wc -l"});
  EXPECT_GT(std::stoi(r.out), 12) << "the host's /dev by default";
}

TEST(SitePolicy, UserBindControlNoRefusesUserBindsButKeepsTheSitesOwn) {
  test::TempDir dir;
  dir.write("marker", "site\n");
  std::string conf = dir.write("capsa.conf", "user bind control = no\nbind path = " + dir.path() + ":/site\n");
  auto r = capsa({"-c", conf, "exec", "-B", "/etc:/mnt", busybox_sif(), "true"});
  expect_refused(r, "user bind control = no", conf);
  r = capsa({"-c", conf, "exec", busybox_sif(), "true"}, {"APPTAINER_BIND=/etc:/mnt"});
  expect_refused(r, "user bind control = no", conf);
  r = capsa({"-c", conf, "exec", "--mount", "src=/etc,dst=/mnt", busybox_sif(), "true"});
  expect_refused(r, "user bind control = no", conf);
  r = capsa({"-c", conf, "exec", "-S", "/scratch", busybox_sif(), "true"});
  expect_refused(r, "user bind control = no", conf);
  // Each of these binds a host path of the user's choosing too (issue 45).
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"-H", "/etc:/mnt"},
                                                {"--home", "/etc"},
                                                {"--containlibs", "/etc/hosts"},
                                                {"--cdi-dirs", dir.path()},
                                                {"-W", dir.path()}}) {
    std::vector<std::string> args = {"-c", conf, "exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {busybox_sif(), "true"});
    expect_refused(capsa(args), "user bind control = no", conf);
  }
  expect_refused(capsa({"-c", conf, "exec", busybox_sif(), "true"}, {"APPTAINER_HOME=/etc:/mnt"}),
                 "user bind control = no", conf);
  // --home only sets HOME where no home is mounted.
  r = capsa({"-c", conf, "exec", "--no-home", "--home", "/etc:/mnt", busybox_sif(), "sh", "-c", "echo $HOME"});
  EXPECT_EQ(r.out, "/mnt\n") << r.err;
  r = capsa({"-c", conf, "exec", busybox_sif(), "cat", "/site/marker"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "site\n");
  // Nor is the working directory bound, as in Apptainer. The build tree may lie below
  // /tmp or the home (a clean clone's does), which those binds would show: they are off.
  const std::string cwd = runtime::testing::test_binary_directory();
  EXPECT_EQ(capsa({"exec", busybox_sif(), "pwd"}, {}, "", cwd).out, cwd + "\n");
  std::string no_cwd = dir.write("no-cwd.conf", "user bind control = no\nmount tmp = no\nmount home = no\n");
  r = capsa({"-c", no_cwd, "exec", busybox_sif(), "pwd"}, {}, "", cwd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out, cwd + "\n");
}

TEST(SitePolicy, EnableOverlayNoRefusesOverlaysAndWritableTmpfs) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "layer");
  std::string conf = dir.write("capsa.conf", "enable overlay = no\n");
  auto r = capsa({"-c", conf, "exec", "--overlay", dir / "layer", busybox_sif(), "true"});
  expect_refused(r, "enable overlay = no", conf);
  r = capsa({"-c", conf, "exec", "--writable-tmpfs", busybox_sif(), "true"});
  expect_refused(r, "enable overlay = no", conf);
  r = capsa({"exec", "--writable-tmpfs", busybox_sif(), "sh", "-c", "echo x > /written && cat /written"});
  EXPECT_EQ(r.out, "x\n") << r.err;
}

TEST(SitePolicy, AllowContainerDirAndSifLimitUsersNotRoot) {
  test::TempDir dir;
  const std::string sandbox = runtime::testing::make_busybox_sandbox(dir);
  std::string no_dir = dir.write("no-dir.conf", "allow container dir = no\n");
  std::string no_sif = dir.write("no-sif.conf", "allow container sif = no\n");
  auto sandbox_run = capsa({"-c", no_dir, "exec", sandbox, "echo", "ran"});
  auto sif_run = capsa({"-c", no_sif, "exec", busybox_sif(), "echo", "ran"});
  if (root()) {  // Apptainer: "Ignored for the root user"
    EXPECT_EQ(sandbox_run.out, "ran\n") << sandbox_run.err;
    EXPECT_EQ(sif_run.out, "ran\n") << sif_run.err;
  } else {
    expect_refused(sandbox_run, "allow container dir = no", no_dir);
    expect_refused(sif_run, "allow container sif = no", no_sif);
  }
  // A directory as --overlay is a "dir" container too.
  std::filesystem::create_directories(dir / "layer");
  auto overlay_run = capsa({"-c", no_dir, "exec", "--overlay", dir / "layer", busybox_sif(), "echo", "ran"});
  if (root())
    EXPECT_EQ(overlay_run.out, "ran\n") << overlay_run.err;
  else
    expect_refused(overlay_run, "allow container dir = no", no_dir);
  // The other kind still runs.
  EXPECT_EQ(capsa({"-c", no_dir, "exec", busybox_sif(), "echo", "ran"}).out, "ran\n");
  EXPECT_EQ(capsa({"-c", no_sif, "exec", sandbox, "echo", "ran"}).out, "ran\n");
}

TEST(SitePolicy, LimitContainerPathsAndOwnersLimitUsersNotRoot) {
  test::TempDir allowed, elsewhere;
  std::filesystem::copy_file(busybox_sif(), allowed / "busybox.sif");
  std::filesystem::copy_file(busybox_sif(), elsewhere / "busybox.sif");
  std::string conf = allowed.write("capsa.conf", "limit container paths = " + allowed.path() + "/\n");
  auto inside = capsa({"-c", conf, "exec", allowed / "busybox.sif", "echo", "ran"});
  EXPECT_EQ(inside.out, "ran\n") << inside.err;
  auto outside = capsa({"-c", conf, "exec", elsewhere / "busybox.sif", "echo", "ran"});
  // A symlink from inside the allowed path to outside it does not get through.
  std::filesystem::create_symlink(elsewhere / "busybox.sif", allowed / "link.sif");
  auto through_link = capsa({"-c", conf, "exec", allowed / "link.sif", "echo", "ran"});
  std::string owners = allowed.write("owners.conf", "limit container owners = nobody\n");
  auto not_owner = capsa({"-c", owners, "exec", allowed / "busybox.sif", "echo", "ran"});
  std::string groups = allowed.write("groups.conf", "limit container groups = capsa-no-such-group\n");
  auto not_group = capsa({"-c", groups, "exec", allowed / "busybox.sif", "echo", "ran"});
  if (root()) {
    EXPECT_EQ(outside.out, "ran\n") << outside.err;
    EXPECT_EQ(not_owner.out, "ran\n") << not_owner.err;
    EXPECT_EQ(not_group.out, "ran\n") << not_group.err;
  } else {
    expect_refused(outside, "limit container paths", conf);
    expect_refused(through_link, "limit container paths", conf);
    expect_refused(not_owner, "limit container owners", owners);
    expect_refused(not_group, "limit container groups", groups);
    // The image's owner is allowed: it runs.
    const std::string me = ::getpwuid(::getuid())->pw_name;
    std::string mine = allowed.write("mine.conf", "limit container owners = nobody, " + me + "\n");
    EXPECT_EQ(capsa({"-c", mine, "exec", allowed / "busybox.sif", "echo", "ran"}).out, "ran\n");
  }
}

TEST(SitePolicy, SessiondirMaxSizeBoundsWritableTmpfs) {
  test::TempDir dir;
  std::string small = dir.write("capsa.conf", "sessiondir max size = 8\n");
  const std::string write_16m = "dd if=/dev/zero of=/big bs=1M count=16 2>/dev/null && echo written";
  auto r = capsa({"-c", small, "exec", "--writable-tmpfs", busybox_sif(), "sh", "-c", write_16m});
  EXPECT_EQ(r.out, "") << "16 MiB fit in an 8 MiB session";
  r = capsa({"exec", "--writable-tmpfs", busybox_sif(), "sh", "-c", write_16m});
  EXPECT_EQ(r.out, "written\n") << r.err;
}

// Root's -c replaces the administrator's file; anyone else's is tightened by it.
TEST(SitePolicy, MemoryFsTypeRamfsHasNoSessionSizeLimit) {
  test::TempDir dir;
  std::string ramfs = dir.write("capsa.conf", "sessiondir max size = 8\nmemory fs type = ramfs\n");
  auto r = capsa({"-c", ramfs, "exec", "--writable-tmpfs", busybox_sif(), "sh", "-c",
                  "dd if=/dev/zero of=/big bs=1M count=16 2>/dev/null && echo written"});
  if (root())
    EXPECT_EQ(r.out, "written\n") << "a ramfs takes no size= (the same file fails on a tmpfs: above) " << r.err;
  else  // a user's file may not choose a ramfs over the administrator's tmpfs (issue 45)
    EXPECT_EQ(r.out, "") << "the administrator's tmpfs and its size held";
}

TEST(SitePolicy, MountTmpResolvConfAndUtsNs) {
  test::TempDir dir;
  dir.write("marker", "host tmp\n");
  std::string conf = dir.write("capsa.conf", "mount tmp = no\nconfig resolv_conf = no\nallow uts ns = no\n");
  EXPECT_EQ(capsa({"exec", busybox_sif(), "cat", dir / "marker"}).out, "host tmp\n");
  EXPECT_EQ(capsa({"-c", conf, "exec", busybox_sif(), "cat", dir / "marker"}).out, "") << "mount tmp = no";
  // The image's /etc/resolv.conf is empty; the host's is not (where it has one).
  const std::string host_resolv = test::read_file("/etc/resolv.conf");
  if (!host_resolv.empty()) {
    EXPECT_EQ(capsa({"exec", busybox_sif(), "cat", "/etc/resolv.conf"}).out, host_resolv);
    EXPECT_EQ(capsa({"-c", conf, "exec", busybox_sif(), "cat", "/etc/resolv.conf"}).out, "")
        << "config resolv_conf = no";
  }
  EXPECT_EQ(capsa({"exec", "--hostname", "capsa-site", busybox_sif(), "hostname"}).out, "capsa-site\n");
  auto r = capsa({"-c", conf, "exec", "--hostname", "capsa-site", busybox_sif(), "hostname"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out, "capsa-site\n") << "allow uts ns = no";
  EXPECT_NE(r.err.find("Not virtualizing UTS namespace by configuration"), std::string::npos) << r.err;
}

// A mount the host makes under a shared mount while the container runs: seen inside with
// `mount slave = yes` (the default), not with `no`. The host side runs in a mount
// namespace of the test's own, where it may make a shared mount (this machine's are private).
std::string host_mount_seen_inside(const std::string& conf) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "shared/sub");
  const std::string script =
      "set -e; d=$1; capsa=$2; image=$3; conf=$4\n"
      "mount --bind \"$d\" \"$d\"; mount --make-shared \"$d\"\n"
      "\"$capsa\" ${conf:+-c \"$conf\"} exec -B \"$d:/data\" \"$image\" sh -c "
      "'i=0; while [ ! -e /data/sub/marker ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done; "
      "cat /data/sub/marker 2>/dev/null || echo absent' &\n"
      "sleep 0.5; mount -t tmpfs capsa-test \"$d/sub\"; echo propagated > \"$d/sub/marker\"; wait $!\n";
  auto r = test::run_process(
      {"unshare", "-m", "sh", "-c", script, "sh", dir / "shared", test::capsa_binary(), busybox_sif(), conf});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(SitePolicy, MountSlaveLetsHostMountsIn) {
  if (!root()) GTEST_SKIP() << "making a shared mount on the host side needs root";
  test::TempDir dir;
  EXPECT_EQ(host_mount_seen_inside(""), "propagated\n");
  EXPECT_EQ(host_mount_seen_inside(dir.write("capsa.conf", "mount slave = no\n")), "absent\n");
}

TEST(SitePolicy, AllowPidNsNoRunsWithoutAPidNamespace) {
  test::TempDir dir;
  std::string conf = dir.write("capsa.conf", "allow pid ns = no\n");
  // In a PID namespace of its own the shell is PID 1 or 2 (behind the shim init).
  auto r = capsa({"exec", "--pid", busybox_sif(), "sh", "-c", "echo $$"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LE(std::stoi(r.out), 2);
  r = capsa({"-c", conf, "exec", "--pid", busybox_sif(), "sh", "-c", "echo $$"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(std::stoi(r.out), 2) << "the host's PID namespace";
  EXPECT_NE(r.err.find("Not virtualizing PID namespace by configuration"), std::string::npos) << r.err;
}

TEST(SitePolicy, AlwaysUseNvIsNvUnlessNoNv) {
  const std::string list = "ls /.singularity.d/libs";
  auto with_nv = capsa({"exec", "--nv", busybox_sif(), "sh", "-c", list});
  if (with_nv.out.empty()) GTEST_SKIP() << "this host has none of nvliblist.conf's files: --nv binds nothing";
  test::TempDir dir;
  std::string conf = dir.write("capsa.conf", "always use nv = yes\n");
  EXPECT_EQ(capsa({"-c", conf, "exec", busybox_sif(), "sh", "-c", list}).out, with_nv.out);
  EXPECT_EQ(capsa({"-c", conf, "exec", "--no-nv", busybox_sif(), "sh", "-c", list}).out, "");
  EXPECT_EQ(capsa({"exec", busybox_sif(), "sh", "-c", list}).out, "");
}

TEST(SitePolicy, MaxLoopDevicesBoundsRootsLoopDevices) {
  test::TempDir dir;
  // Root would serve this lone gzip image through FUSE (runtime/lone_start.hpp): kept
  // on the kernel's squashfs, it needs a loop device.
  std::string conf = dir.write("capsa.conf", "max loop devices = 0\nfuse for lone gzip images = no\n");
  // A copy of its own: no loop device of another container's is shared with it.
  std::filesystem::copy_file(busybox_sif(), dir / "busybox.sif");
  auto r = capsa({"-c", conf, "exec", dir / "busybox.sif", "echo", "ran"});
  if (root()) {
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find("`max loop devices = 0`"), std::string::npos) << r.err;
  } else {
    EXPECT_EQ(r.out, "ran\n") << "FUSE needs no loop device: " << r.err;
  }
}

TEST(SitePolicy, AllowKernelSquashfsNoMountsWithFuseEvenAsRoot) {
  // Without loop devices (max loop devices = 0) root's kernel mount cannot happen: a run
  // that works shows the image came through FUSE.
  test::TempDir dir;
  std::string conf = dir.write("capsa.conf", "max loop devices = 0\nallow kernel squashfs = no\n");
  std::filesystem::copy_file(busybox_sif(), dir / "busybox.sif");
  auto r = capsa({"-c", conf, "exec", dir / "busybox.sif", "echo", "ran"});
  EXPECT_EQ(r.out, "ran\n") << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(SiteConfigFile, GlobalConfigFlagEnvironmentAndErrors) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "site");
  dir.write("site/marker", "site data\n");
  std::string conf = dir.write("capsa.conf", "bind path = " + (dir / "site") + ":/site-data\n");
  const std::vector<std::string> cat = {"exec", busybox_sif(), "cat", "/site-data/marker"};
  auto with = [&](std::vector<std::string> before, const std::vector<std::string>& env = {}) {
    before.insert(before.end(), cat.begin(), cat.end());
    return capsa(before, env).out;
  };
  EXPECT_EQ(with({"-c", conf}), "site data\n");
  EXPECT_EQ(with({"--config", conf}), "site data\n");
  EXPECT_EQ(with({"--config=" + conf}), "site data\n");
  EXPECT_EQ(with({"-s", "-c", conf}), "site data\n");
  EXPECT_EQ(with({}, {"CAPSA_CONFIG=" + conf}), "site data\n");
  EXPECT_EQ(with({}, {"APPTAINER_CONFIG_FILE=" + conf}), "site data\n");
  EXPECT_EQ(with({}, {"SINGULARITY_CONFIG_FILE=" + conf}), "site data\n");
  EXPECT_EQ(with({}), "");

  // A missing file, a malformed one: one line, no container.
  auto r = capsa({"-c", dir / "nope.conf", "exec", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(dir / "nope.conf"), std::string::npos) << r.err;
  std::string bad = dir.write("bad.conf", "# fine\nmount home = perhaps\n");
  r = capsa({"-c", bad, "exec", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "capsa: error: " + bad + ":2: \"mount home = perhaps\": expected yes or no\n");
  // An unknown directive: a warning naming file and line, and the run goes on.
  std::string unknown = dir.write("unknown.conf", "mount hmoe = no\n");
  r = capsa({"-c", unknown, "exec", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(r.out, "ran\n");
  EXPECT_EQ(r.err,
            "WARNING: " + unknown + ":1: unknown directive \"mount hmoe\" ignored (did you mean \"mount home\"?)\n");
}

TEST(SiteConfigFile, TheInstalledFileIsReadAndAUsersFileCannotLoosenIt) {
  const SitePrefix& site = SitePrefix::get();
  runtime::testing::HomeDir home;
  site.write_conf("user bind control = no\nmount home = no\nbind path = /etc/hosts\n");
  const std::string marker = home.path() + "/marker";
  auto r = site.capsa({"exec", "-B", "/etc:/mnt", busybox_sif(), "true"});
  expect_refused(r, "user bind control = no", site.conf());
  EXPECT_EQ(site.capsa({"exec", busybox_sif(), "cat", marker}).out, "") << "mount home = no";

  test::TempDir dir;
  std::string loose = dir.write("loose.conf", "user bind control = yes\nmount home = yes\n");
  auto bind = site.capsa({"-c", loose, "exec", "-B", "/etc:/mnt", busybox_sif(), "echo", "bound"});
  auto env_bind = site.capsa({"exec", "-B", "/etc:/mnt", busybox_sif(), "echo", "bound"}, {"CAPSA_CONFIG=" + loose});
  auto home_run = site.capsa({"-c", loose, "exec", busybox_sif(), "cat", marker});
  if (root()) {
    // Root's -c replaces the administrator's file, as Apptainer's --config does.
    EXPECT_EQ(bind.out, "bound\n") << bind.err;
    EXPECT_EQ(env_bind.out, "bound\n") << env_bind.err;
    EXPECT_EQ(home_run.out, "host home\n") << home_run.err;
  } else {
    expect_refused(bind, "user bind control = no", site.conf());
    expect_refused(env_bind, "user bind control = no", site.conf());
    EXPECT_EQ(home_run.out, "") << "mount home = no holds";
    // A user's file may still tighten: its own restriction applies too.
    std::string tight = dir.write("tight.conf", "mount proc = no\n");
    EXPECT_EQ(site.capsa({"-c", tight, "exec", busybox_sif(), "sh", "-c", "test -e /proc/self || echo no-proc"}).out,
              "no-proc\n");
  }
  site.write_conf("");
}

// Apptainer's --build-config: its defaults less the default binds, resolv.conf, home and
// devpts; root's replaces the administrator's file, anyone else's is tightened by it.
TEST(SiteConfigFile, BuildConfigLeavesOutTheDefaultBindsAndTheHome) {
  runtime::testing::HomeDir home;
  const std::string script = "cat " + home.path() + "/marker 2>/dev/null; grep -c ' /etc/hosts ' /proc/self/mountinfo";
  auto r = capsa({"exec", busybox_sif(), "sh", "-c", script});
  EXPECT_EQ(r.out, "host home\n1\n") << r.err;
  r = capsa({"--build-config", "exec", busybox_sif(), "sh", "-c", script});
  EXPECT_EQ(r.out, "0\n") << "no home, no /etc/hosts bind: " << r.err;

  const SitePrefix& site = SitePrefix::get();
  site.write_conf("user bind control = no\n");
  r = site.capsa({"--build-config", "exec", "-B", "/etc:/mnt", busybox_sif(), "echo", "bound"});
  if (root())
    EXPECT_EQ(r.out, "bound\n") << r.err;
  else
    expect_refused(r, "user bind control = no", site.conf());
  site.write_conf("");
}

TEST(SiteConfigFile, ConfigGlobalRoundTrip) {
  const SitePrefix& site = SitePrefix::get();
  site.write_conf("# kept\nbind path = /etc/hosts\nmount home = yes\n");
  auto run = [&](const std::vector<std::string>& args) { return site.capsa(args); };
  EXPECT_EQ(run({"config", "global", "--get", "bind path"}).out, "/etc/hosts\n");
  auto r = run({"config", "global", "--set", "bind path", "/scratch,/work"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run({"config", "global", "--get", "bind path"}).out, "/scratch,/work,/etc/hosts\n");
  EXPECT_EQ(run({"config", "global", "-s", "mount home", "no"}).exit_code, 0);
  EXPECT_EQ(run({"config", "global", "-g", "mount home"}).out, "no\n");
  EXPECT_EQ(run({"config", "global", "--unset", "bind path", "/work"}).exit_code, 0);
  EXPECT_EQ(run({"config", "global", "--get", "bind path"}).out, "/scratch,/etc/hosts\n");
  // --dry-run prints and writes nothing.
  r = run({"config", "global", "--dry-run", "--reset", "mount home"});
  EXPECT_NE(r.out.find("mount home = yes\n"), std::string::npos) << r.out;
  EXPECT_EQ(run({"config", "global", "--get", "mount home"}).out, "no\n");
  EXPECT_EQ(run({"config", "global", "--reset", "mount home"}).exit_code, 0);
  EXPECT_EQ(run({"config", "global", "--get", "mount home"}).out, "yes\n");
  EXPECT_EQ(test::read_file(site.conf()).rfind("# kept\n", 0), 0u) << "comments stay";
  // And the change is what runs see.
  test::TempDir dir;
  dir.write("marker", "via config global\n");
  EXPECT_EQ(run({"config", "global", "--set", "bind path", dir.path() + ":/from-site"}).exit_code, 0);
  EXPECT_EQ(run({"exec", busybox_sif(), "cat", "/from-site/marker"}).out, "via config global\n");

  // Bad requests: one line, exit 1, the file unchanged.
  const std::string before = test::read_file(site.conf());
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"config", "global", "--set", "mount hmoe", "no"},
                                              {"config", "global", "--set", "mount home", "perhaps"},
                                              {"config", "global", "--unset", "bind path", "/never"},
                                              {"config", "global", "mount home"}}) {
    r = run(bad);
    EXPECT_EQ(r.exit_code, 1) << bad[3];
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  EXPECT_EQ(test::read_file(site.conf()), before);

  // -c FILE edits that file instead.
  std::string own = dir.write("own.conf", "mount tmp = yes\n");
  EXPECT_EQ(run({"-c", own, "config", "global", "--set", "mount tmp", "no"}).exit_code, 0);
  EXPECT_EQ(test::read_file(own), "mount tmp = no\n");
  EXPECT_EQ(test::read_file(site.conf()), before);

  if (!root()) {
    // A file the user may not write: refused in one line.
    ASSERT_EQ(::chmod(own.c_str(), 0444), 0);
    r = run({"-c", own, "config", "global", "--set", "mount tmp", "yes"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "capsa: error: cannot change " + own +
                         ": permission denied (the administrator's configuration is changed as root; give -c FILE to "
                         "change a copy of your own)\n");
    EXPECT_EQ(test::read_file(own), "mount tmp = no\n");
  }
  site.write_conf("");
}

}  // namespace
}  // namespace capsa::config
