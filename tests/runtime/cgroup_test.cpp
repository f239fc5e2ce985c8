// The cgroup limit flags and --apply-cgroups, seen from inside the container: the values
// in its cgroup's files (cgroup v2's memory.max, pids.max, cpu.max, or the v1 files where
// the host's controllers are on v1 hierarchies), a fork bomb stopped by --pids-limit, the
// cgroup gone after the container (the leak check), and unprivileged: the clear error
// without a delegated cgroup, the limits with one (set up here, as root, for the test user).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/run_support.hpp"
#include "support/background.hpp"
#include "support/leaks.hpp"
#include "support/test_env.hpp"
#include "support/unprivileged.hpp"

namespace capsa::runtime {
namespace {

namespace fs = std::filesystem;

// Prints, for each cgroup of the container that capsa made, its name and the limit files
// it has (v2 at /sys/fs/cgroup or /sys/fs/cgroup/unified, v1 at /sys/fs/cgroup/CONTROLLERS).
constexpr const char* kReport = R"sh(while IFS=: read -r n c p; do
  case "$p" in */capsa-*) ;; *) continue ;; esac
  if [ -z "$c" ]; then d=/sys/fs/cgroup$p; [ -d /sys/fs/cgroup/unified ] && d=/sys/fs/cgroup/unified$p
  else d=/sys/fs/cgroup/$c$p; fi
  echo "name=${p##*/}"
  for f in memory.max memory.limit_in_bytes memory.low memory.soft_limit_in_bytes memory.swap.max \
      memory.memsw.limit_in_bytes memory.oom_control pids.max cpu.max cpu.cfs_quota_us cpu.weight cpu.shares \
      cpuset.cpus cpuset.mems io.weight io.bfq.weight blkio.weight blkio.bfq.weight; do
    [ -f "$d/$f" ] && echo "$f=$(head -n 1 "$d/$f")"
  done
done < /proc/self/cgroup)sh";

struct Report {
  std::map<std::string, std::string> values;
  std::set<std::string> names;
  bool v1() const { return values.count("memory.limit_in_bytes") != 0 || values.count("cpu.cfs_quota_us") != 0; }
  std::string operator[](const std::string& file) const {
    auto it = values.find(file);
    return it == values.end() ? "(missing)" : it->second;
  }
};

Report parse_report(const std::string& out) {
  Report r;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "name")
      r.names.insert(value);
    else
      r.values[key] = value;
  }
  return r;
}

bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

// Whether the kernel offers block I/O weights where capsa would set them: on a v1 blkio
// hierarchy, blkio.weight (CFQ) or blkio.bfq.weight (BFQ) in its root. Kernels without
// CFQ whose devices do not use BFQ have only the throttle.* files, and capsa refuses a
// weight there in one line (checked by WeightsAreRefusedInOneLineWhereTheKernelHasNone).
// A host with no v1 blkio hierarchy (cgroup v2) is asked nothing here: io.weight is the
// io controller's own.
// A block device of this machine to name in --blkio-weight-device, or "".
std::string some_block_device() {
  for (const char* candidate : {"/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/xvda", "/dev/loop0"}) {
    struct stat st {};
    if (::stat(candidate, &st) == 0 && S_ISBLK(st.st_mode)) return candidate;
  }
  return "";
}

bool kernel_offers_blkio_weights() {
  const std::string v1 = "/sys/fs/cgroup/blkio";
  if (!fs::is_directory(v1)) return true;
  return fs::exists(v1 + "/blkio.weight") || fs::exists(v1 + "/blkio.bfq.weight");
}

class CgroupLimits : public ::testing::Test, public test::PrivateContainers {
 protected:
  CgroupLimits() : PrivateContainers("busybox.sif", "CAPSA_CGROUP_TEST") {}

  void SetUp() override { ASSERT_EQ(::chdir("/"), 0); }

  test::ProcessResult run(const std::vector<std::string>& flags, const std::string& script) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {image, "sh", "-c", script});
    return testing::capsa(args, {marker, "CAPSA_SESSION_DIR=" + session});
  }

  // The limits as seen inside, or an empty report when capsa refused with the clear line
  // an unprivileged caller without a delegated cgroup gets (checked here).
  std::optional<Report> limits_inside(const std::vector<std::string>& flags) {
    const test::ProcessResult result = run(flags, kReport);
    if (::geteuid() != 0 && result.exit_code != 0) {
      EXPECT_TRUE(one_line(result.err)) << result.err;
      EXPECT_NE(result.err.find("Delegate=yes"), std::string::npos) << result.err;
      EXPECT_EQ(result.out, "");
      return std::nullopt;
    }
    EXPECT_EQ(result.exit_code, 0) << result.err;
    Report report = parse_report(result.out);
    EXPECT_FALSE(report.names.empty()) << "the container is in no cgroup of capsa's:\n" << result.out;
    cgroup_names.insert(cgroup_names.end(), report.names.begin(), report.names.end());
    return report;
  }
};

TEST_F(CgroupLimits, FlagsSetTheContainersCgroup) {
  auto report = limits_inside({"--memory", "64M", "--pids-limit", "20", "--cpus", "0.5", "--cpu-shares", "512"});
  if (report) {
    EXPECT_EQ((*report)["pids.max"], "20");
    if (report->v1()) {
      EXPECT_EQ((*report)["memory.limit_in_bytes"], "67108864");
      EXPECT_EQ((*report)["cpu.cfs_quota_us"], "50000");
      EXPECT_EQ((*report)["cpu.shares"], "512");
    } else {
      EXPECT_EQ((*report)["memory.max"], "67108864");
      EXPECT_EQ((*report)["cpu.max"], "50000 100000");
      EXPECT_EQ((*report)["cpu.weight"], "20");
    }
  }
  expect_nothing_left();  // the cgroups too
}

TEST_F(CgroupLimits, EveryLimitFlagReachesItsFile) {
  const bool weights = kernel_offers_blkio_weights();
  std::vector<std::string> flags = {
      "--memory",      "64M", "--memory-reservation", "32M", "--memory-swap", "128M", "--oom-kill-disable",
      "--cpuset-cpus", "0",   "--cpuset-mems",        "0"};
  if (weights) flags.insert(flags.end(), {"--blkio-weight", "500"});
  auto report = limits_inside(flags);
  if (report) {
    EXPECT_EQ((*report)["cpuset.cpus"], "0");
    EXPECT_EQ((*report)["cpuset.mems"], "0");
    if (report->v1()) {
      EXPECT_EQ((*report)["memory.soft_limit_in_bytes"], "33554432");
      EXPECT_EQ((*report)["memory.memsw.limit_in_bytes"], "134217728");
      EXPECT_EQ((*report)["memory.oom_control"], "oom_kill_disable 1");
      const bool bfq = report->values.count("blkio.weight") == 0;
      if (weights) EXPECT_EQ((*report)[bfq ? "blkio.bfq.weight" : "blkio.weight"], "500");
    } else {
      EXPECT_EQ((*report)["memory.low"], "33554432");
      EXPECT_EQ((*report)["memory.swap.max"], "67108864");  // the swap alone
      const bool bfq = report->values.count("io.weight") == 0;
      EXPECT_EQ((*report)[bfq ? "io.bfq.weight" : "io.weight"], bfq ? "default 500" : "default 4950");
    }
  }
  expect_nothing_left();
}

// Where the kernel has no blkio weight files at all, --blkio-weight and
// --blkio-weight-device are refused in one line naming the missing file, and nothing runs.
TEST_F(CgroupLimits, WeightsAreRefusedInOneLineWhereTheKernelHasNone) {
  if (kernel_offers_blkio_weights()) GTEST_SKIP() << "this kernel offers blkio weights (EveryLimitFlagReachesItsFile)";
  std::vector<std::vector<std::string>> attempts = {{"--blkio-weight", "500"}};
  if (const std::string device = some_block_device(); !device.empty())
    attempts.push_back({"--blkio-weight-device", device + ":300"});
  for (const std::vector<std::string>& flags : attempts) {
    const test::ProcessResult result = run(flags, "echo ran");
    EXPECT_NE(result.exit_code, 0) << flags[0];
    EXPECT_EQ(result.out, "") << flags[0];
    EXPECT_TRUE(one_line(result.err)) << result.err;
    const bool no_weight = result.err.find("has no blkio") != std::string::npos;
    const bool no_delegation = ::geteuid() != 0 && result.err.find("Delegate=yes") != std::string::npos;
    EXPECT_TRUE(no_weight || no_delegation) << result.err;
  }
  expect_nothing_left();
}

// --blkio-weight-device: the device's numbers reach the kernel, which takes the weight
// or refuses it in one line (a per-device weight needs BFQ as the device's scheduler).
TEST_F(CgroupLimits, BlkioWeightDeviceNamesTheDevice) {
  if (!kernel_offers_blkio_weights())
    GTEST_SKIP() << "no blkio weights on this kernel (WeightsAreRefusedInOneLineWhereTheKernelHasNone)";
  const std::string device = some_block_device();
  if (device.empty()) GTEST_SKIP() << "no block device to name";
  const test::ProcessResult result = run({"--blkio-weight-device", device + ":300"}, kReport);
  if (result.exit_code == 0) {
    Report report = parse_report(result.out);
    cgroup_names.insert(cgroup_names.end(), report.names.begin(), report.names.end());
    EXPECT_FALSE(report.names.empty()) << result.out;
  } else {
    EXPECT_TRUE(one_line(result.err)) << result.err;
    struct stat st {};
    ASSERT_EQ(::stat(device.c_str(), &st), 0);
    const std::string numbers = std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
    const bool refused = result.err.find("refused " + numbers + " 300") != std::string::npos;
    const bool no_delegation = ::geteuid() != 0 && result.err.find("Delegate=yes") != std::string::npos;
    EXPECT_TRUE(refused || no_delegation) << result.err;
  }
  expect_nothing_left();
}

TEST_F(CgroupLimits, ApplyCgroupsTakesApptainersToml) {
  const std::string toml = work.write("cgroups.toml",
                                      "[memory]\n  limit = 33554432\n  reservation = 16777216\n"
                                      "[pids]\n  limit = 15\n");
  ::chmod(work.path().c_str(), 0755);
  auto report = limits_inside({"--apply-cgroups", toml});
  if (report) {
    EXPECT_EQ((*report)["pids.max"], "15");
    EXPECT_EQ((*report)[report->v1() ? "memory.limit_in_bytes" : "memory.max"], "33554432");
    EXPECT_EQ((*report)[report->v1() ? "memory.soft_limit_in_bytes" : "memory.low"], "16777216");
  }
  expect_nothing_left();
}

TEST_F(CgroupLimits, PidsLimitStopsAForkBomb) {
  // Thirty background processes: more than the limit allows, and none without it (the
  // shell gives up at the first fork that fails).
  const std::string bomb =
      std::string(kReport) + "\ni=0; while [ $i -lt 30 ]; do sleep 1 & i=$((i+1)); done; wait; echo spawned";
  const test::ProcessResult unlimited = run({}, bomb);
  ASSERT_EQ(unlimited.exit_code, 0) << unlimited.err;
  EXPECT_EQ(unlimited.err.find("fork"), std::string::npos) << unlimited.err;
  EXPECT_NE(unlimited.out.find("spawned"), std::string::npos) << unlimited.out;
  const test::ProcessResult limited = run({"--pids-limit", "10"}, bomb);
  if (::geteuid() != 0 && limited.exit_code != 0 && limited.err.find("Delegate=yes") != std::string::npos) {
    EXPECT_TRUE(one_line(limited.err)) << limited.err;
  } else {
    EXPECT_NE(limited.err.find("can't fork"), std::string::npos) << limited.out << limited.err;
    EXPECT_EQ(limited.out.find("spawned"), std::string::npos) << limited.out;
    Report report = parse_report(limited.out);
    cgroup_names.insert(cgroup_names.end(), report.names.begin(), report.names.end());
    EXPECT_EQ(report["pids.max"], "10");
  }
  expect_nothing_left();
}

TEST_F(CgroupLimits, BadValuesGiveOneLineBeforeAnythingStarts) {
  const std::string toml = work.write("bad.toml", "[memory]\n  limt = 5\n");
  ::chmod(work.path().c_str(), 0755);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--memory", "lots"}, "--memory lots: expected a size"},
      {{"--pids-limit", "many"}, "--pids-limit many: expected a whole number"},
      {{"--apply-cgroups", toml}, "memory.limt: unknown setting"},
      {{"--apply-cgroups", toml, "--memory", "1G"}, "cannot be combined"},
      {{"--apply-cgroups", work / "missing.toml"}, "missing.toml"},
  };
  for (const auto& [flags, expected] : cases) {
    const test::ProcessResult result = run(flags, "echo ran");
    EXPECT_NE(result.exit_code, 0);
    EXPECT_EQ(result.out, "");
    EXPECT_TRUE(one_line(result.err)) << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
  }
  expect_nothing_left();
}

TEST_F(CgroupLimits, InstanceAndWhatJoinsItKeepItsLimits) {
  const std::string name = "cgroups-" + std::to_string(::getpid());
  const std::vector<std::string> env = {marker, "CAPSA_SESSION_DIR=" + session};
  const test::ProcessResult started = testing::capsa({"instance", "start", "--pids-limit", "9", image, name}, env);
  if (::geteuid() != 0 && started.exit_code != 0) {
    EXPECT_NE(started.err.find("Delegate=yes"), std::string::npos) << started.err;
  } else {
    ASSERT_EQ(started.exit_code, 0) << started.err;
    const test::ProcessResult joined = testing::capsa({"exec", "instance://" + name, "sh", "-c", kReport}, env);
    testing::capsa({"instance", "stop", name}, env);
    EXPECT_EQ(joined.exit_code, 0) << joined.err;
    Report report = parse_report(joined.out);
    cgroup_names.insert(cgroup_names.end(), report.names.begin(), report.names.end());
    EXPECT_EQ(report.names.size(), 1U) << joined.out;
    EXPECT_EQ(report["pids.max"], "9") << joined.out;
  }
  expect_nothing_left();
}

// Root delegates a cgroup to the test user, as systemd's Delegate=yes does (the user owns
// it, and on v2 runs in a leaf below it), and the test user's container gets its limits.
class DelegatedCgroup : public CgroupLimits {
 protected:
  std::vector<std::string> made;  // removed at the end, deepest first

  void TearDown() override {
    // The remover of the container's cgroup runs in the delegated one until it is done.
    for (auto it = made.rbegin(); it != made.rend(); ++it)
      EXPECT_TRUE(test::eventually([&] { return ::rmdir(it->c_str()) == 0 || errno == ENOENT; }, 10)) << *it;
  }

  void chown_to(const std::string& path, const test::TestUser& user) {
    ASSERT_EQ(::chown(path.c_str(), user.uid, user.gid), 0) << path;
  }

  // The cgroup.procs files the test user's process is put in first.
  std::vector<std::string> delegate(const test::TestUser& user) {
    std::vector<std::string> procs;
    const std::string name = "capsa-test-delegated-" + std::to_string(::getpid());
    std::string unified;
    for (const char* dir : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"})
      if (fs::exists(std::string(dir) + "/cgroup.controllers") &&
          test::read_file(std::string(dir) + "/cgroup.controllers").find("pids") != std::string::npos)
        unified = dir;
    if (!unified.empty()) {
      // v2: the delegated cgroup holds no process itself; the user's live in a leaf.
      const std::string top = unified + "/" + name, leaf = top + "/leaf";
      for (const char* c : {"+pids", "+memory"}) std::ofstream(unified + "/cgroup.subtree_control") << c;
      EXPECT_EQ(::mkdir(top.c_str(), 0755), 0) << top;
      made.push_back(top);
      for (const char* c : {"+pids", "+memory"}) std::ofstream(top + "/cgroup.subtree_control") << c;
      EXPECT_EQ(::mkdir(leaf.c_str(), 0755), 0) << leaf;
      made.push_back(leaf);
      for (const std::string& p : {top, top + "/cgroup.procs", top + "/cgroup.subtree_control", top + "/cgroup.threads",
                                   leaf, leaf + "/cgroup.procs"})
        chown_to(p, user);
      procs.push_back(leaf + "/cgroup.procs");
      return procs;
    }
    // v1: the user's own cgroup in each hierarchy is a directory the user owns.
    for (const char* controller : {"pids", "memory"}) {
      std::ifstream own("/proc/self/cgroup");
      std::string path;
      for (std::string line; std::getline(own, line);) {
        const auto first = line.find(':'), second = line.find(':', first + 1);
        const std::string names = "," + line.substr(first + 1, second - first - 1) + ",";
        if (names.find("," + std::string(controller) + ",") != std::string::npos) path = line.substr(second + 1);
      }
      const std::string dir = "/sys/fs/cgroup/" + std::string(controller) + (path == "/" ? "" : path) + "/" + name;
      EXPECT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
      made.push_back(dir);
      for (const std::string& p : {dir, dir + "/cgroup.procs", dir + "/tasks"}) chown_to(p, user);
      procs.push_back(dir + "/cgroup.procs");
    }
    return procs;
  }
};

TEST_F(DelegatedCgroup, TestUserGetsLimitsInACgroupDelegatedToIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "root sets the delegation up (the .user run checks the error without one)";
  const auto user = test::test_user();
  if (!user) GTEST_SKIP() << "no test user";
  const std::vector<std::string> procs = delegate(*user);
  ASSERT_FALSE(HasFailure());
  ::chmod(work.path().c_str(), 0755);
  ::chmod(session.c_str(), 0777);
  std::string enter;
  for (const std::string& p : procs) enter += "echo $$ > " + p + " && ";
  const test::ProcessResult result = test::run_process(
      {"sh", "-c",
       enter + "exec setpriv --reuid=" + std::to_string(user->uid) + " --regid=" + std::to_string(user->gid) +
           " --clear-groups env HOME=" + user->home + " " + marker + " \"$@\"",
       "sh", test::capsa_binary(), "exec", "--pids-limit", "12", "--memory", "48M", image, "sh", "-c", kReport});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Report report = parse_report(result.out);
  ASSERT_FALSE(report.names.empty()) << result.out;
  cgroup_names.insert(cgroup_names.end(), report.names.begin(), report.names.end());
  EXPECT_EQ(report["pids.max"], "12");
  EXPECT_EQ(report[report.v1() ? "memory.limit_in_bytes" : "memory.max"], std::to_string(48 << 20));
  expect_nothing_left();
}

// A hybrid host (controllers on v1 hierarchies, a cgroup2 mount beside them that holds
// only the controllers no v1 hierarchy took, as this project's VMs and many clusters'
// nodes are): limits whose controllers are all in the cgroup2 hierarchy go there. Here
// the test mounts cgroup2 in a mount namespace of its own and asks for a hugetlb limit
// through --apply-cgroups' [unified] table, as root and, in a cgroup root delegates to
// it, as the test user; on a unified host the same run checks the v2 path once more.
class HybridCgroup : public DelegatedCgroup {
 protected:
  std::string hierarchy = work / "cgroup2";  // where each run mounts it
  std::string toml = work / "hugetlb.toml";

  void SetUp() override {
    DelegatedCgroup::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "root mounts the cgroup2 hierarchy (the .user run: DelegatedCgroup)";
    fs::create_directories(hierarchy);
    std::ofstream(toml) << "[unified]\n\"hugetlb.2MB.max\" = \"4194304\"\n";
    // The root's controllers: hugetlb must be there, with its 2 MB page size.
    const test::ProcessResult top = in_hierarchy("cat \"$0\"/cgroup.controllers");
    if (top.out.find("hugetlb") == std::string::npos)
      GTEST_SKIP() << "hugetlb is on a v1 hierarchy here, or the kernel has no hugetlb controller";
    in_hierarchy("echo +hugetlb > \"$0\"/cgroup.subtree_control");
  }

  // `script` in a mount namespace of its own with the cgroup2 hierarchy at $0.
  test::ProcessResult in_hierarchy(const std::string& script, const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {
        "unshare", "-m", "--propagation", "private", "sh", "-c", "mount -t cgroup2 none \"$0\" && " + script,
        hierarchy};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv);
  }

  // Inside the container: its cgroup2 path, then the limit in that cgroup (the hierarchy
  // is bound at /cgroup2).
  static constexpr const char* kHugetlbReport =
      "p=$(sed -n 's/^0:://p' /proc/self/cgroup); echo \"$p\"; cat \"/cgroup2$p/hugetlb.2MB.max\"";

  // The cgroup `path` of the hierarchy is gone (its remover ran) within a while.
  void expect_removed(const std::string& path) {
    EXPECT_TRUE(test::eventually([&] { return in_hierarchy("test ! -e \"$0$1\"", {path}).exit_code == 0; }, 10))
        << path << " is left";
  }
};

TEST_F(HybridCgroup, ALimitOfAControllerOnlyCgroupV2HasGoesThere) {
  const test::ProcessResult root =
      in_hierarchy("exec \"$@\"", {test::capsa_binary(), "exec", "--apply-cgroups", toml, "-B", hierarchy + ":/cgroup2",
                                   image, "sh", "-c", kHugetlbReport});
  ASSERT_EQ(root.exit_code, 0) << root.err;
  EXPECT_TRUE(root.out.starts_with("/capsa-")) << root.out;
  EXPECT_EQ(root.out.substr(root.out.find('\n') + 1), "4194304\n") << root.out;
  expect_removed(root.out.substr(0, root.out.find('\n')));

  // The test user, in a leaf of a cgroup root made theirs: the limit's cgroup is beside it.
  const auto user = test::test_user();
  if (!user) GTEST_SKIP() << "no test user";
  const std::string name = "capsa-test-hybrid-" + std::to_string(::getpid());
  ASSERT_EQ(in_hierarchy("mkdir \"$0/$1\" \"$0/$1/leaf\" && echo +hugetlb > \"$0/$1/cgroup.subtree_control\" && "
                         "cd \"$0/$1\" && chown \"$2\" . cgroup.procs cgroup.subtree_control cgroup.threads leaf "
                         "leaf/cgroup.procs",
                         {name, std::to_string(user->uid)})
                .exit_code,
            0);
  ::chmod(work.path().c_str(), 0755);
  ::chmod(session.c_str(), 0777);
  const test::ProcessResult theirs =
      in_hierarchy("echo $$ > \"$0/$1/leaf/cgroup.procs\" && shift && exec \"$@\"",
                   {name, "setpriv", "--reuid=" + std::to_string(user->uid), "--regid=" + std::to_string(user->gid),
                    "--clear-groups", "env", "HOME=" + user->home, marker, test::capsa_binary(), "exec",
                    "--apply-cgroups", toml, "-B", hierarchy + ":/cgroup2", image, "sh", "-c", kHugetlbReport});
  EXPECT_EQ(theirs.exit_code, 0) << theirs.err;
  EXPECT_TRUE(theirs.out.starts_with("/" + name + "/capsa-")) << theirs.out;
  EXPECT_EQ(theirs.out.substr(theirs.out.find('\n') + 1), "4194304\n") << theirs.out;
  if (theirs.exit_code == 0) expect_removed(theirs.out.substr(0, theirs.out.find('\n')));
  EXPECT_TRUE(
      test::eventually([&] { return in_hierarchy("rmdir \"$0/$1/leaf\" \"$0/$1\"", {name}).exit_code == 0; }, 10))
      << "the delegated cgroup empties";
  expect_nothing_left();
}

}  // namespace
}  // namespace capsa::runtime
