// `capsa exec --rocm` on a small image with a dynamic loader, against the fake ROCm
// driver (tests/fixtures/make-fake-rocm.sh): everything is asserted from inside the
// container. Runs as root and unprivileged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "fake_driver.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::gpu {
namespace {

using test::fake_rocm;

std::string image() { return fake_rocm("rocm.sif"); }

// capsa with the fake driver as the host's: its cache, its PATH, its /dev.
test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return test::FakeDriverHost{test::fake_rocm_cache(), fake_rocm()}.capsa(args, env);
}

std::vector<std::string> exec(const std::vector<std::string>& flags, const std::string& script) {
  return test::exec_script(flags, image(), script);
}

// The fixture's own libraries (the host's libdrm, libdrm_amdgpu, libnuma... match the list too and are bound).
const std::string kListFixtureLibs = "ls /.singularity.d/libs | grep -e amdocl -e amdhip -e rocr -e CXL -e hsa";

TEST(RocmExec, LibrariesToolsAndLibraryPathAreThere) {
  auto r =
      capsa(exec({"--rocm"}, kListFixtureLibs + "; rocm-smi; command -v rocminfo; echo $LD_LIBRARY_PATH; rocm-hello"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "libCXLActivityLogger.so\nlibamdocl64.so\nlibrocr_debug_agent64.so.2\n"
            "GPU[0] : Fake capsa AMD GPU (gfx90a)\n/usr/bin/rocminfo\n/.singularity.d/libs\nOK\n");
  EXPECT_EQ(r.err, "");
}

TEST(RocmExec, TheImageBringsItsOwnHipAsWithApptainer14) {
  // libamdhip64 is not in the shipped list: hip-hello finds no HIP in this image.
  auto r = capsa(exec({"--rocm"}, "hip-hello 2>/dev/null || echo NOHIP"));
  EXPECT_EQ(r.out, "NOHIP\n") << r.err;
  // A site that wants the host's HIP lists it (CAPSA_ROCMLIBLIST, or the installed list).
  test::TempDir dir;
  std::string list = dir.write("rocmliblist.conf", "rocm-smi\nlibamdhip64.so\n");
  auto listed = capsa(exec({"--rocm"}, "hip-hello"), {"CAPSA_ROCMLIBLIST=" + list});
  EXPECT_EQ(listed.out, "HIP OK\n") << listed.err;
}

TEST(RocmExec, TheLibrariesAreReadOnly) {
  auto r = capsa(exec({"--rocm", "--writable-tmpfs"},
                      "echo x > /.singularity.d/libs/libamdocl64.so 2>/dev/null && echo WROTE || echo REFUSED"));
  EXPECT_EQ(r.out, "REFUSED\n") << r.err;
}

TEST(RocmExec, NothingIsBoundWithoutRocm) {
  auto r =
      capsa(exec({}, "ls /.singularity.d/libs 2>/dev/null; command -v rocm-smi; rocm-hello 2>/dev/null || echo NOLIB"));
  EXPECT_EQ(r.out, "NOLIB\n") << r.err;
}

TEST(RocmExec, ApptainerRocmActsLikeTheFlag) {
  for (const char* var : {"APPTAINER_ROCM=1", "SINGULARITY_ROCM=true"}) {
    auto r = capsa(exec({}, "rocm-hello"), {var});
    EXPECT_EQ(r.out, "OK\n") << var << ": " << r.err;
  }
}

TEST(RocmExec, NoRocmUndoesRocm) {
  // A site module may set APPTAINER_ROCM for everyone; --no-rocm (or APPTAINER_NO_ROCM,
  // APPTAINER_ROCM_OFF) turns it off.
  const std::string probe = "ls /.singularity.d/libs 2>/dev/null; rocm-hello 2>/dev/null || echo NOLIB";
  auto flag = capsa(exec({"--rocm", "--no-rocm"}, probe));
  EXPECT_EQ(flag.out, "NOLIB\n") << flag.err;
  auto environment = capsa(exec({"--no-rocm"}, probe), {"APPTAINER_ROCM=1"});
  EXPECT_EQ(environment.out, "NOLIB\n") << environment.err;
  for (const char* var : {"APPTAINER_NO_ROCM=1", "SINGULARITY_ROCM_OFF=1"}) {
    auto variable = capsa(exec({"--rocm"}, probe), {var});
    EXPECT_EQ(variable.out, "NOLIB\n") << var << ": " << variable.err;
  }
}

TEST(RocmExec, KfdAndDriAreThereUnderContain) {
  if (::access(fake_rocm("dev/kfd").c_str(), F_OK) != 0)
    GTEST_SKIP() << "the fixture's device nodes were not made (mknod needs root when fixtures are built)";
  for (const char* flag : {"--contain", "--containall"}) {
    auto r = capsa(
        exec({"--rocm", flag, "--pwd", "/"},
             "[ -c /dev/kfd ] && [ -c /dev/dri/card0 ] && [ -c /dev/dri/renderD128 ] && echo DEVICES; rocm-hello"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "DEVICES\nOK\n") << flag;
    EXPECT_EQ(r.err, "") << flag;
  }
  auto without = capsa(exec({"--contain", "--pwd", "/"}, "[ -e /dev/kfd ] || [ -e /dev/dri ] || echo NONE"));
  EXPECT_EQ(without.out, "NONE\n") << without.err;
}

TEST(RocmExec, DebugPrintsTheDriverMounts) {
  auto r = capsa({"exec", "--debug", "--rocm", image(), "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("bind " + fake_rocm("lib/libamdocl64.so") + " -> /.singularity.d/libs/libamdocl64.so (ro)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("-> /usr/bin/rocm-smi (ro)"), std::string::npos) << r.err;
}

TEST(RocmExec, NoDriverIsAWarningAndTheCommandRuns) {
  test::TempDir dir;
  std::string list = dir.write("rocmliblist.conf", "rocm-smi\nlibamdocl64.so\nlibhsakmt.so\n");
  auto r = capsa(exec({"--rocm"}, "echo RAN"),
                 {"CAPSA_ROCMLIBLIST=" + list, "CAPSA_LDSO_CACHE=" + test::fake_nvidia("nodriver.ld.so.cache"),
                  "PATH=/usr/sbin:/usr/bin:/sbin:/bin"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "RAN\n");
  EXPECT_EQ(r.err, "WARNING: --rocm: no ROCm driver libraries or programs found on this host; running without them\n");
}

TEST(RocmExec, NvAndRocmTogether) {
  // A node with both vendors' drivers: each flag brings its own list.
  auto r = capsa(exec({"--rocm", "--nv"}, "rocm-hello; command -v rocm-smi"),
                 {"CAPSA_NVLIBLIST=" + std::string(CAPSA_TEST_SOURCE_DIR) + "/etc/nvliblist.conf"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\n/usr/bin/rocm-smi\n");
}

}  // namespace
}  // namespace capsa::runtime::gpu
