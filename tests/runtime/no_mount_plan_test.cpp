// --no-mount as data: the values parsed, and the plan without the mounts they name.
// (no_mount_test.cpp checks the same from inside running containers.)
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/mount_plan.hpp"

namespace capsa::runtime {
namespace {

bool planned(const std::vector<MountStep>& steps, const std::string& target) {
  return std::any_of(steps.begin(), steps.end(), [&](const MountStep& s) { return s.target == target; });
}

MountRequest request(const std::string& no_mount, bool contain = false) {
  MountRequest r;
  r.home_source = r.home_destination = "/home/alice";
  r.cwd = "/scratch/run";
  r.contain = contain;
  r.no_mount = parse_no_mount({no_mount});
  return r;
}

TEST(NoMountPlan, ValuesAreApptainersAndUnknownOnesComeBack) {
  std::vector<std::string> unknown;
  NoMount no = parse_no_mount({"proc,sys,bogus", "dev,devpts,tmp,home,cwd,hostfs,/etc/hosts", "bind-paths,Proc"}, &unknown);
  EXPECT_TRUE(no.proc && no.sys && no.dev && no.devpts && no.tmp && no.home && no.cwd && no.all_bind_paths);
  EXPECT_EQ(no.bind_paths, std::vector<std::string>{"/etc/hosts"});
  EXPECT_EQ(unknown, (std::vector<std::string>{"bogus", "Proc"})) << "names are case-sensitive, as in Apptainer";
}

TEST(NoMountPlan, EachValueRemovesItsMounts) {
  EXPECT_FALSE(planned(plan_mounts(request("proc")), "/proc"));
  EXPECT_FALSE(planned(plan_mounts(request("sys")), "/sys"));
  for (bool contain : {false, true}) {
    auto steps = plan_mounts(request("dev", contain));
    for (const char* t : {"/dev", "/dev/pts", "/dev/shm", "/dev/null"}) EXPECT_FALSE(planned(steps, t)) << t;
    auto tmp = plan_mounts(request("tmp", contain));
    EXPECT_FALSE(planned(tmp, "/tmp"));
    EXPECT_FALSE(planned(tmp, "/var/tmp"));
    EXPECT_FALSE(planned(plan_mounts(request("home", contain)), "/home/alice"));
  }
  EXPECT_TRUE(planned(plan_mounts(request("", true)), "/dev/pts"));
  EXPECT_FALSE(planned(plan_mounts(request("devpts", true)), "/dev/pts"));
  EXPECT_TRUE(planned(plan_mounts(request("")), "/scratch/run"));
  EXPECT_FALSE(planned(plan_mounts(request("cwd")), "/scratch/run"));
  auto binds = plan_mounts(request("bind-paths"));
  for (const char* t : {"/etc/hosts", "/etc/localtime", "/etc/resolv.conf"}) EXPECT_FALSE(planned(binds, t)) << t;
  auto one = plan_mounts(request("/etc/localtime"));
  EXPECT_FALSE(planned(one, "/etc/localtime"));
  EXPECT_TRUE(planned(one, "/etc/hosts"));
  EXPECT_EQ(plan_mounts(request("hostfs")), plan_mounts(request("")));
}

TEST(NoMountPlan, HomeAndUserBindsAreMarkedAsTheUsers) {
  MountRequest r = request("");
  BindSpec data;
  data.source = data.destination = "/data";
  r.binds = {data};
  for (const MountStep& s : plan_mounts(r))
    EXPECT_EQ(s.user_requested, s.target == "/home/alice" || s.target == "/data") << s.target;
}

}  // namespace
}  // namespace capsa::runtime
