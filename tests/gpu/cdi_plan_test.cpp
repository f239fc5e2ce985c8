// What CDI edits become (runtime/gpu/cdi_apply.hpp), from selections made in memory.
#include <gtest/gtest.h>

#include "runtime/gpu/cdi_apply.hpp"
#include "util/error.hpp"

namespace capsa::runtime::gpu {
namespace {

CdiHook hook(const std::string& stage, const std::string& arg) { return {stage, "/bin/true", {"true", arg}, {}, {}}; }

TEST(CdiPlan, HooksRunStageByStageAndTheSamePathIsBoundOnce) {
  CdiSelection common{"a.com/x (spec)", {}};
  common.edits.env = {"A=1", "B=2=3"};
  common.edits.device_nodes = {{"/dev/null", "", "c", 1, 3, "rw", {}, {}, {}}};
  common.edits.mounts = {{"/etc/hostname", "/etc/from-cdi", "", {"ro", "nosuid", "bind"}}};
  common.edits.hooks = {hook("createContainer", "common"), hook("startContainer", "start")};
  CdiSelection device{"a.com/x=0 (spec)", {}};
  device.edits.env = {"A=one"};
  device.edits.device_nodes = {{"/dev/null", "/dev/null", "", {}, {}, "", {}, {}, {}}};
  device.edits.mounts = {{"/etc/hosts", "/etc/from-cdi", "", {"rbind"}}};
  device.edits.hooks = {hook("createRuntime", "device"), hook("prestart", "first")};
  device.edits.additional_gids = {0, 44};
  CdiPlan plan = plan_cdi({common, device}, true);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].target, "/dev/null");
  EXPECT_FALSE(plan.steps[0].directory);
  EXPECT_EQ(plan.steps[1].source, "/etc/hosts");  // the later mount at /etc/from-cdi wins
  EXPECT_EQ(plan.steps[1].kind, MountStep::Kind::RecursiveBind);
  EXPECT_FALSE(plan.steps[1].read_only);
  EXPECT_EQ(plan.env, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "2=3"}, {"A", "one"}}));
  ASSERT_EQ(plan.root_hooks.size(), 3u);
  EXPECT_EQ(plan.root_hooks[0].hook.args[1], "first");
  EXPECT_EQ(plan.root_hooks[1].hook.args[1], "device");
  EXPECT_EQ(plan.root_hooks[2].hook.args[1], "common");
  EXPECT_EQ(plan.root_hooks[2].origin, "createContainer hook of a.com/x (spec)");
  ASSERT_EQ(plan.start_hooks.size(), 1u);
  EXPECT_TRUE(plan.writes_root());
  EXPECT_EQ(plan.warnings, std::vector<std::string>{"a.com/x=0 (spec): additionalGids ignored (the command keeps the caller's groups)"});
}

TEST(CdiPlan, WhatCapsaCannotDoIsRefusedInOneLine) {
  auto error = [](CdiEdits edits) {
    try {
      plan_cdi({{"a.com/x=0 (f)", std::move(edits)}}, true);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CdiEdits rdt;
  rdt.intel_rdt = true;
  EXPECT_EQ(error(rdt), "a.com/x=0 (f): intelRdt is not supported (capsa sets up no resctrl group)");
  CdiEdits tmpfs;
  tmpfs.mounts = {{"tmpfs", "/scratch", "tmpfs", {"size=1m"}}};
  EXPECT_EQ(error(tmpfs), "a.com/x=0 (f): mount /scratch: mount type \"tmpfs\" is not supported (capsa makes bind mounts only)");
  CdiEdits gone;
  gone.mounts = {{"/nonexistent/lib.so", "/usr/lib/lib.so", "", {"ro"}}};
  EXPECT_EQ(error(gone), "a.com/x=0 (f): mount /usr/lib/lib.so: /nonexistent/lib.so is not on this host");
  CdiEdits not_a_node;
  not_a_node.device_nodes = {{"/dev/x", "/etc/hosts", "", {}, {}, "", {}, {}, {}}};
  EXPECT_EQ(error(not_a_node), "a.com/x=0 (f): device node /dev/x: /etc/hosts is not a device node");
  CdiEdits block;
  block.device_nodes = {{"/dev/null", "", "b", {}, {}, "", {}, {}, {}}};
  EXPECT_EQ(error(block), "a.com/x=0 (f): device node /dev/null: the spec says b, /dev/null is c 1:3");
}

}  // namespace
}  // namespace capsa::runtime::gpu
