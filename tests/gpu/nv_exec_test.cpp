// `capsa exec --nv` on a small image with a dynamic loader, against the fake driver:
// everything is asserted from inside the container. Runs as root and unprivileged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "fake_driver.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::gpu {
namespace {

using test::fake_nvidia;

std::string image() { return fake_nvidia("gpu.sif"); }

// capsa with the fake driver as the host's: its cache, its PATH, its /dev.
test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return test::FakeDriverHost{test::fake_cache(), fake_nvidia()}.capsa(args, env);
}

std::vector<std::string> exec(const std::vector<std::string>& flags, const std::string& script) {
  return test::exec_script(flags, image(), script);
}

TEST(NvExec, LibrariesToolsAndLibraryPathAreThere) {
  auto r = capsa(exec({"--nv"}, "ls /.singularity.d/libs | grep -e cuda -e nvidia; nvidia-smi; command -v nvidia-smi; echo $LD_LIBRARY_PATH"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "libcuda.so.1\nlibnvidia-ml.so.1\nlibnvidia-ptxjitcompiler.so.1\n"
            "GPU 0: Fake capsa GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
            "/usr/bin/nvidia-smi\n/.singularity.d/libs\n");
  EXPECT_EQ(r.err, "");  // a missing listed library (libnvidia-cfg.so.1) is skipped silently
  // (The host's own Mesa/glvnd libGL*, libEGL* match the list too and are bound, as Apptainer does.)
}

// Apptainer 1.5+: when the path is only the driver libraries, the image's own library
// directories (its ldconfig -Nv list) go first, so its copies win. The image here is a
// sandbox copy of the fixture's root with an ldconfig stand-in printing two directories.
TEST(NvExec, TheImagesLibraryDirectoriesComeFirst) {
  test::TempDir dir;
  std::string root = dir / "root";
  ASSERT_EQ(test::run_process({"cp", "-a", fake_nvidia("rootfs"), root}).exit_code, 0);
  test::run_process({"mkdir", "-p", root + "/sbin"});
  dir.write("root/sbin/ldconfig",
            "#!/bin/sh\necho '/usr/local/lib: (from /etc/ld.so.conf.d/local.conf:1)'\n"
            "printf '\\tlibx.so.1 -> libx.so.1\\n'\necho '/lib/x86_64-linux-gnu: (from <builtin>:0)'\n");
  test::run_process({"chmod", "755", root + "/sbin/ldconfig"});
  auto r = capsa({"exec", "--nv", root, "sh", "-c", "echo $LD_LIBRARY_PATH"});
  EXPECT_EQ(r.out, "/usr/local/lib:/lib/x86_64-linux-gnu:/.singularity.d/libs\n") << r.err;
  auto injected = capsa({"exec", "--nv", "--env", "LD_LIBRARY_PATH=/opt/lib", root, "sh", "-c", "echo $LD_LIBRARY_PATH"});
  EXPECT_EQ(injected.out, "/opt/lib:/.singularity.d/libs\n") << injected.err;
}

TEST(NvExec, AProgramLinkedAgainstLibcudaLoadsIt) {
  auto r = capsa(exec({"--nv"}, "cuda-hello"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\n");
}

// An instance started with --nv keeps the driver for every join: `exec instance://NAME`
// needs no --nv of its own to load libcuda (the real check: tests/gpu/check.sh's GPU run).
TEST(NvExec, AnInstanceStartedWithNvGivesItsJoinsTheDriver) {
  const std::string name = "nv-join-" + std::to_string(::getpid());
  auto started = capsa({"instance", "start", "--nv", image(), name});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  auto joined = capsa({"exec", "instance://" + name, "sh", "-c", "cuda-hello; echo $LD_LIBRARY_PATH"});
  auto plain = capsa({"exec", image(), "sh", "-c", "cuda-hello 2>/dev/null || echo NOLIB"});
  auto stopped = capsa({"instance", "stop", name});
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  EXPECT_EQ(joined.out, "OK\n/.singularity.d/libs\n") << joined.err;
  EXPECT_EQ(plain.out, "NOLIB\n") << "a container of its own, without --nv, has no driver";
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
}

TEST(NvExec, TheLibrariesAreReadOnly) {
  auto r = capsa(exec({"--nv", "--writable-tmpfs"},
                      "echo x > /.singularity.d/libs/libcuda.so.1 2>/dev/null && echo WROTE || echo REFUSED"));
  EXPECT_EQ(r.out, "REFUSED\n") << r.err;
}

TEST(NvExec, NothingIsBoundWithoutNv) {
  auto r = capsa(exec({}, "ls /.singularity.d/libs 2>/dev/null; command -v nvidia-smi; cuda-hello 2>/dev/null || echo NOLIB"));
  EXPECT_EQ(r.out, "NOLIB\n") << r.err;
}

TEST(NvExec, ApptainerNvActsLikeTheFlag) {
  for (const char* var : {"APPTAINER_NV=1", "SINGULARITY_NV=true"}) {
    auto r = capsa(exec({}, "cuda-hello"), {var});
    EXPECT_EQ(r.out, "OK\n") << var << ": " << r.err;
  }
}

TEST(NvExec, NoNvUndoesNv) {
  // A site module may set APPTAINER_NV for everyone; --no-nv (or APPTAINER_NO_NV) turns it off.
  const std::string probe = "ls /.singularity.d/libs 2>/dev/null; cuda-hello 2>/dev/null || echo NOLIB";
  auto flag = capsa(exec({"--nv", "--no-nv"}, probe));
  EXPECT_EQ(flag.out, "NOLIB\n") << flag.err;
  auto environment = capsa(exec({"--no-nv"}, probe), {"APPTAINER_NV=1"});
  EXPECT_EQ(environment.out, "NOLIB\n") << environment.err;
  auto variable = capsa(exec({"--nv"}, probe), {"APPTAINER_NO_NV=1"});
  EXPECT_EQ(variable.out, "NOLIB\n") << variable.err;
}

TEST(NvExec, DevicesAreThereUnderContain) {
  if (::access(fake_nvidia("dev/nvidia0").c_str(), F_OK) != 0)
    GTEST_SKIP() << "the fixture's device nodes were not made (mknod needs root when fixtures are built)";
  for (const char* flag : {"--contain", "--containall"}) {
    auto r = capsa(exec({"--nv", flag, "--pwd", "/"}, "[ -c /dev/nvidia0 ] && [ -c /dev/nvidiactl ] && echo DEVICES; cuda-hello"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "DEVICES\nOK\n") << flag;
    EXPECT_EQ(r.err, "") << flag;  // the library-path script writes to /dev/null, also unprivileged
  }
}

TEST(NvExec, GpuSelectionPassesThroughCleanenv) {
  auto r = capsa(exec({"--nv", "--cleanenv"}, "echo $NVIDIA_VISIBLE_DEVICES/$CUDA_VISIBLE_DEVICES"),
                 {"NVIDIA_VISIBLE_DEVICES=1,2", "CUDA_VISIBLE_DEVICES=0"});
  EXPECT_EQ(r.out, "1,2/0\n") << r.err;
}

TEST(NvExec, DebugPrintsTheDriverMounts) {
  auto r = capsa({"exec", "--debug", "--nv", image(), "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("bind " + fake_nvidia("lib/libcuda.so.1") + " -> /.singularity.d/libs/libcuda.so.1 (ro)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("-> /usr/bin/nvidia-smi (ro)"), std::string::npos) << r.err;
}

TEST(NvExec, ACorruptCacheIsOneWarningAndTheCommandRuns) {
  auto r = capsa(exec({"--nv"}, "nvidia-smi >/dev/null && echo RAN"),
                 {"CAPSA_LDSO_CACHE=" + fake_nvidia("corrupt.ld.so.cache")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "RAN\n");
  EXPECT_EQ(r.err.rfind("WARNING: cannot read the ld.so cache " + fake_nvidia("corrupt.ld.so.cache"), 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(NvExec, NoDriverIsAWarningAndTheCommandRuns) {
  // A list of NVIDIA-only names: the host's default directories (in every cache ldconfig
  // writes) may hold glvnd's libGL*, which the shipped list also names.
  test::TempDir dir;
  std::string list = dir.write("nvliblist.conf", "nvidia-smi\nlibcuda.so\nlibnvidia-ml.so\n");
  auto r = capsa(exec({"--nv"}, "echo RAN"), {"CAPSA_NVLIBLIST=" + list, "CAPSA_LDSO_CACHE=" + fake_nvidia("nodriver.ld.so.cache"),
                                               "PATH=/usr/sbin:/usr/bin:/sbin:/bin"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "RAN\n");
  EXPECT_NE(r.err.find("WARNING: --nv: no NVIDIA driver"), std::string::npos) << r.err;
}

TEST(NvExec, NvccliWithoutTheToolIsAClearError) {
  if (!test::run_process({"sh", "-c", "command -v nvidia-container-cli"}).out.empty())
    GTEST_SKIP() << "nvidia-container-cli is installed here";
  auto r = capsa(exec({"--nvccli"}, "true"), {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("nvidia-container-cli"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("libnvidia-container-tools"), std::string::npos) << r.err;
  auto env = capsa(exec({}, "true"), {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "APPTAINER_NVCCLI=1"});
  EXPECT_NE(env.err.find("libnvidia-container-tools"), std::string::npos) << env.err;
}

// nvidia-container-cli is not installable here: a stand-in records how capsa calls it and
// writes into the root it is given, which the container must then see.
TEST(NvExec, NvccliConfiguresTheRootBeforeEntering) {
  test::TempDir dir;
  std::string bin = dir / "bin";
  test::run_process({"mkdir", "-p", bin});
  dir.write("bin/nvidia-container-cli",
            "#!/bin/sh\nfor root; do :; done\necho \"$*\" > \"$root/nvccli-args\"\n");
  test::run_process({"chmod", "755", bin + "/nvidia-container-cli"});
  auto r = capsa(exec({"--nvccli"}, "cat /nvccli-args; echo $NVIDIA_VISIBLE_DEVICES"),
                 {"PATH=" + bin + ":/usr/sbin:/usr/bin:/sbin:/bin"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string user = ::geteuid() == 0 ? "" : "--user ";
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')).rfind(user + "configure --no-cgroups --device=all --compute --utility", 0), 0u)
      << r.out;
  auto contained = capsa(exec({"--nvccli", "--contain"}, "cat /nvccli-args"), {"PATH=" + bin + ":/usr/sbin:/usr/bin:/sbin:/bin"});
  EXPECT_EQ(contained.out.find("--device"), std::string::npos) << contained.out << contained.err;
}

}  // namespace
}  // namespace capsa::runtime::gpu
