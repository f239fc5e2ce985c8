// The --rocm mount plan from the shipped rocmliblist.conf and the fake ROCm driver's cache.
#include <gtest/gtest.h>
#include <unistd.h>

#include "fake_driver.hpp"
#include "runtime/gpu/nvliblist.hpp"
#include "runtime/gpu/rocm.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::gpu {
namespace {

std::string shipped_list() { return std::string(CAPSA_TEST_SOURCE_DIR) + "/etc/rocmliblist.conf"; }

DriverRequest fake_request(bool contain) {
  return {shipped_list(), test::fake_rocm_cache(), test::fake_rocm("bin") + ":/usr/bin:/bin", test::fake_rocm("dev"),
          contain};
}

const MountStep* at(const DriverPlan& plan, const std::string& target) {
  for (const MountStep& s : plan.steps)
    if (s.target == target) return &s;
  return nullptr;
}

TEST(RocmLibList, TheShippedListHasApptainer14sEntries) {
  DriverFileList list = parse_driver_file_list(test::read_file(shipped_list()));
  EXPECT_EQ(list.binaries, (std::vector<std::string>{"rocm-smi", "rocminfo"}));
  EXPECT_EQ(list.libraries.size(), 14u);
  EXPECT_EQ(list.libraries.front(), "libCXLActivityLogger.so");
  EXPECT_EQ(list.libraries.back(), "libOpenCL.so");
  EXPECT_TRUE(list.files.empty());
}

TEST(RocmPlan, ListedLibrariesAndProgramsAreBoundReadOnly) {
  DriverPlan plan = plan_rocm(fake_request(false));
  const MountStep* ocl = at(plan, "/.singularity.d/libs/libamdocl64.so");
  ASSERT_NE(ocl, nullptr);
  EXPECT_EQ(ocl->source, test::fake_rocm("lib/libamdocl64.so"));
  EXPECT_TRUE(ocl->read_only);
  EXPECT_NE(at(plan, "/.singularity.d/libs/librocr_debug_agent64.so.2"), nullptr);
  EXPECT_NE(at(plan, "/.singularity.d/libs/libCXLActivityLogger.so"), nullptr);
  // Not in Apptainer 1.4's list: the image brings its own HIP and HSA runtime.
  EXPECT_EQ(at(plan, "/.singularity.d/libs/libamdhip64.so.5"), nullptr);
  EXPECT_EQ(at(plan, "/.singularity.d/libs/libhsa-runtime64.so.1"), nullptr);
  ASSERT_NE(at(plan, "/usr/bin/rocm-smi"), nullptr);
  EXPECT_EQ(at(plan, "/usr/bin/rocminfo")->source, test::fake_rocm("bin/rocminfo"));
  EXPECT_TRUE(plan.warnings.empty());
  EXPECT_EQ(at(plan, "/dev/kfd"), nullptr);  // the host's /dev is bound whole
  EXPECT_EQ(at(plan, "/dev/dri"), nullptr);
}

TEST(RocmPlan, ContainedDevGetsKfdAndDri) {
  if (::access(test::fake_rocm("dev/kfd").c_str(), F_OK) != 0)
    GTEST_SKIP() << "the fixture's device nodes were not made (mknod needs root when fixtures are built)";
  DriverPlan plan = plan_rocm(fake_request(true));
  const MountStep* kfd = at(plan, "/dev/kfd");
  ASSERT_NE(kfd, nullptr);
  EXPECT_EQ(kfd->source, test::fake_rocm("dev/kfd"));
  EXPECT_TRUE(kfd->required);
  EXPECT_FALSE(kfd->directory);
  const MountStep* dri = at(plan, "/dev/dri");
  ASSERT_NE(dri, nullptr);
  EXPECT_TRUE(dri->directory);
}

TEST(RocmPlan, NoDriverIsOneWarning) {
  DriverRequest r = fake_request(false);
  r.cache_path = test::fake_nvidia("nodriver.ld.so.cache");
  r.host_path = "/nonexistent";
  // ROCm-only names: the host's default directories may hold libdrm, libnuma, libpci (listed too).
  test::TempDir dir;
  r.list_path = dir.write("rocmliblist.conf", "rocm-smi\nlibamdocl64.so\nlibhsakmt.so\n");
  DriverPlan plan = plan_rocm(r);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_EQ(plan.warnings[0], "--rocm: no ROCm driver libraries or programs found on this host; running without them");
  EXPECT_TRUE(plan.steps.empty());
}

}  // namespace
}  // namespace capsa::runtime::gpu
