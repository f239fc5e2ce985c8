// The --nv mount plan from the shipped list and the fake driver's cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <unistd.h>

#include "fake_driver.hpp"
#include "runtime/gpu/nvidia.hpp"
#include "runtime/gpu/nvliblist.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::gpu {
namespace {

std::string shipped_list() { return std::string(CAPSA_TEST_SOURCE_DIR) + "/etc/nvliblist.conf"; }

DriverRequest fake_request(bool contain) {
  return {shipped_list(), test::fake_cache(), test::fake_nvidia("bin") + ":/usr/bin:/bin",
          test::fake_nvidia("dev"), contain};
}

const MountStep* at(const DriverPlan& plan, const std::string& target) {
  for (const MountStep& s : plan.steps)
    if (s.target == target) return &s;
  return nullptr;
}

TEST(NvLibList, TheShippedListHasApptainersEntries) {
  DriverFileList list = parse_driver_file_list(test::read_file(shipped_list()));
  EXPECT_EQ(list.binaries.size(), 5u);
  EXPECT_EQ(list.libraries.size(), 61u);
  EXPECT_EQ(list.files.size(), 7u);
  EXPECT_EQ(list.binaries.front(), "nvidia-smi");
  EXPECT_NE(std::find(list.libraries.begin(), list.libraries.end(), "libcuda.so"), list.libraries.end());
}

TEST(NvLibList, CommentsAndKindsAreRecognised) {
  DriverFileList list = parse_driver_file_list("# c\n  libfoo.so  # lib\n/etc/x.json\ntool\n\n");
  EXPECT_EQ(list.libraries, std::vector<std::string>{"libfoo.so"});
  EXPECT_EQ(list.files, std::vector<std::string>{"/etc/x.json"});
  EXPECT_EQ(list.binaries, std::vector<std::string>{"tool"});
}

TEST(NvidiaPlan, LibrariesAndProgramsAreBoundReadOnly) {
  DriverPlan plan = plan_nvidia(fake_request(false));
  const MountStep* cuda = at(plan, "/.singularity.d/libs/libcuda.so.1");
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->source, test::fake_nvidia("lib/libcuda.so.1"));
  EXPECT_TRUE(cuda->read_only);
  EXPECT_FALSE(cuda->directory);
  EXPECT_NE(at(plan, "/.singularity.d/libs/libnvidia-ml.so.1"), nullptr);
  // In the cache, but the file is gone: skipped, no warning.
  EXPECT_EQ(at(plan, "/.singularity.d/libs/libnvidia-cfg.so.1"), nullptr);
  const MountStep* smi = at(plan, "/usr/bin/nvidia-smi");
  ASSERT_NE(smi, nullptr);
  EXPECT_EQ(smi->source, test::fake_nvidia("bin/nvidia-smi"));
  EXPECT_TRUE(plan.warnings.empty());
  EXPECT_EQ(at(plan, "/dev/nvidia0"), nullptr);  // the host's /dev is bound whole
}

TEST(NvidiaPlan, ContainedDevDirGetsTheDevices) {
  if (::access(test::fake_nvidia("dev/nvidia0").c_str(), F_OK) != 0)
    GTEST_SKIP() << "the fixture's device nodes were not made (mknod needs root when fixtures are built)";
  DriverPlan plan = plan_nvidia(fake_request(true));
  ASSERT_NE(at(plan, "/dev/nvidia0"), nullptr);
  ASSERT_NE(at(plan, "/dev/nvidiactl"), nullptr);
  EXPECT_TRUE(at(plan, "/dev/nvidia0")->required);
}

TEST(NvidiaPlan, ABrokenCacheIsOneWarning) {
  DriverRequest r = fake_request(false);
  r.cache_path = test::fake_nvidia("corrupt.ld.so.cache");
  DriverPlan plan = plan_nvidia(r);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("corrupt.ld.so.cache"), std::string::npos);
  EXPECT_EQ(plan.libraries, 0u);
  EXPECT_NE(at(plan, "/usr/bin/nvidia-smi"), nullptr);
}

TEST(NvidiaPlan, NoDriverIsOneWarning) {
  DriverRequest r = fake_request(false);
  r.cache_path = test::fake_nvidia("nodriver.ld.so.cache");
  r.host_path = "/nonexistent";
  // NVIDIA-only names: the host's default directories may hold glvnd's libGL*, also listed.
  test::TempDir dir;
  r.list_path = dir.write("nvliblist.conf", "nvidia-smi\nlibcuda.so\nlibnvidia-ml.so\n");
  DriverPlan plan = plan_nvidia(r);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_NE(plan.warnings[0].find("no NVIDIA driver"), std::string::npos);
  EXPECT_TRUE(plan.steps.empty());
}

}  // namespace
}  // namespace capsa::runtime::gpu
