#include "runtime/mount_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace capsa::runtime {
namespace {

MountRequest typical() {
  MountRequest r;
  r.home_source = r.home_destination = "/home/alice";
  r.cwd = "/scratch/alice/run1";
  return r;
}

const MountStep* find(const std::vector<MountStep>& steps, const std::string& target) {
  auto it = std::find_if(steps.begin(), steps.end(), [&](const MountStep& s) { return s.target == target; });
  return it == steps.end() ? nullptr : &*it;
}

TEST(MountPlan, DefaultsShowTheHostSystemHomeTmpAndWorkingDirectory) {
  auto steps = plan_mounts(typical());
  for (const char* target : {"/proc", "/sys", "/dev", "/etc/hosts", "/etc/localtime", "/etc/resolv.conf", "/home/alice",
                             "/tmp", "/var/tmp", "/etc/passwd", "/etc/group", "/scratch/alice/run1"})
    EXPECT_NE(find(steps, target), nullptr) << target;
  EXPECT_EQ(find(steps, "/dev")->kind, MountStep::Kind::RecursiveBind) << "GPUs and InfiniBand stay visible";
  EXPECT_EQ(find(steps, "/etc/passwd")->kind, MountStep::Kind::SessionFile);
}

TEST(MountPlan, WorkingDirectoryUnderAMountIsNotBoundTwice) {
  MountRequest r = typical();
  r.cwd = "/home/alice/project";
  EXPECT_EQ(find(plan_mounts(r), "/home/alice/project"), nullptr);
}

TEST(MountPlan, UserBindsComeAfterHomeAndKeepTheirOrderAndMode) {
  MountRequest r = typical();
  BindSpec data, opt;
  data.source = "/scratch/data";
  data.destination = "/data";
  data.read_only = true;
  opt.source = opt.destination = "/opt/x";
  r.binds = {data, opt};
  auto steps = plan_mounts(r);
  auto pos = [&](const std::string& t) { return find(steps, t) - steps.data(); };
  EXPECT_LT(pos("/home/alice"), pos("/data"));
  EXPECT_LT(pos("/data"), pos("/opt/x"));
  EXPECT_TRUE(find(steps, "/data")->read_only);
  EXPECT_EQ(describe({*find(steps, "/data")}), "bind /scratch/data -> /data (ro)\n");
}

TEST(MountPlan, ContainReplacesHostTmpHomeAndDevices) {
  MountRequest r = typical();
  r.contain = true;
  auto steps = plan_mounts(r);
  EXPECT_EQ(find(steps, "/tmp")->kind, MountStep::Kind::Tmpfs);
  EXPECT_EQ(find(steps, "/home/alice")->kind, MountStep::Kind::Tmpfs);
  EXPECT_EQ(find(steps, "/dev")->kind, MountStep::Kind::Tmpfs);
  EXPECT_NE(find(steps, "/dev/null"), nullptr);
  EXPECT_EQ(find(steps, "/scratch/alice/run1"), nullptr);
}

TEST(MountPlan, WorkdirBacksTmpUnderContain) {
  MountRequest r = typical();
  r.contain = true;
  r.workdir = "/scratch/w";
  auto steps = plan_mounts(r);
  EXPECT_EQ(find(steps, "/tmp")->source, "/scratch/w/tmp");
  EXPECT_EQ(find(steps, "/var/tmp")->source, "/scratch/w/var_tmp");
  EXPECT_EQ(find(steps, "/home/alice")->source, "/scratch/w/home");
}

TEST(MountPlan, NoHomeLeavesHomeOut) {
  MountRequest r = typical();
  r.no_home = true;
  EXPECT_EQ(find(plan_mounts(r), "/home/alice"), nullptr);
}

}  // namespace
}  // namespace capsa::runtime
