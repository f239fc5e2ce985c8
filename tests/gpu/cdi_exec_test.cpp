// `capsa exec --device VENDOR/CLASS=NAME --cdi-dirs DIR`: CDI specs shaped like
// nvidia-ctk's (tests/gpu/cdi) pointing at the fake NVIDIA driver, with a stand-in for
// nvidia-ctk's hooks. Everything is asserted from inside the container; runs as root and
// unprivileged.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "cdi_fixture.hpp"
#include "fake_driver.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::gpu {
namespace {

using test::fake_nvidia;

std::string image() { return fake_nvidia("gpu.sif"); }

bool have_device_nodes() { return ::access(fake_nvidia("dev/nvidia0").c_str(), F_OK) == 0; }

test::ProcessResult capsa(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {"env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(test::capsa_binary());
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv, "", 60);
}

std::vector<std::string> exec(const std::string& cdi, std::vector<std::string> flags, const std::string& script) {
  std::vector<std::string> args = {"exec", "--cdi-dirs", cdi};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {image(), "sh", "-c", script});
  return args;
}

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

// The whole nvidia-ctk-shaped spec in the container, in either format.
void expect_gpu_all(const std::string& spec) {
  if (!have_device_nodes())
    GTEST_SKIP() << "the fake driver's /dev/nvidia0 and /dev/nvidiactl were not made (mknod needs root when "
                    "fixtures are built): the spec's device nodes cannot be bound";
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, spec);
  auto r = capsa(exec(cdi, {"--contain", "--pwd", "/", "--device", "nvidia.com/gpu=all"},
                      "[ -c /dev/nvidia0 ] && [ -c /dev/nvidiactl ] && echo DEVICES; cuda-hello; nvidia-smi; "
                      "readlink /usr/lib/x86_64-linux-gnu/libcuda.so; cat /etc/ld.so.conf.d/capsa-cdi.conf; "
                      "echo $NVIDIA_VISIBLE_DEVICES; cat /cdi-hook.log; "
                      "echo x 2>/dev/null > /usr/bin/nvidia-smi && echo WROTE || echo READ-ONLY"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "DEVICES\nOK\nGPU 0: Fake capsa GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
            "libcuda.so.1\n/usr/lib/x86_64-linux-gnu\nvoid\n"
            // The hooks ran before the command, on the root, with only their own environment.
            "hook create-symlinks --link libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so | env NVIDIA_CTK_DEBUG | "
            "status creating\n"
            "hook update-ldcache --folder /usr/lib/x86_64-linux-gnu | env | status creating\n"
            "READ-ONLY\n");
}

TEST(CdiExec, GpuAllFromAV05JsonSpec) { expect_gpu_all("nvidia-v0.5.json"); }

TEST(CdiExec, GpuAllFromAV08YamlSpec) { expect_gpu_all("nvidia-v0.8.yaml"); }

TEST(CdiExec, TheEnvironmentOfTheSpecSurvivesCleanenv) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "");
  dir.write("cdi/env.yaml",
            "cdiVersion: 0.5.0\nkind: example.com/thing\ncontainerEdits:\n  env: [COMMON=yes, WHICH=common]\n"
            "devices:\n- name: a\n  containerEdits:\n    env: [WHICH=a]\n");
  auto r = capsa(exec(cdi, {"--cleanenv", "--device", "example.com/thing=a"}, "echo $COMMON $WHICH"));
  EXPECT_EQ(r.out, "yes a\n") << r.err;
  // The repeatable flag, the comma list and the same device twice.
  auto twice = capsa(exec(
      cdi, {"--device", "example.com/thing=a,example.com/thing=a", "--device", "example.com/thing=a"}, "echo $WHICH"));
  EXPECT_EQ(twice.out, "a\n") << twice.err;
}

TEST(CdiExec, WithoutContainTheHostsOwnNodesAreUsed) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "");
  dir.write("cdi/null.json",
            R"({"cdiVersion": "0.3.0", "kind": "example.com/null", "devices": [{"name": "n", "containerEdits": )"
            R"({"deviceNodes": [{"path": "/dev/null", "type": "c", "major": 1, "minor": 3}]}}]})");
  auto r = capsa(exec(cdi, {"--device", "example.com/null=n"}, "[ -c /dev/null ] && echo NULL"));
  EXPECT_EQ(r.out, "NULL\n") << r.err;
  auto contained = capsa(exec(cdi, {"--contain", "--device", "example.com/null=n"}, "[ -c /dev/null ] && echo NULL"));
  EXPECT_EQ(contained.out, "NULL\n") << contained.err;
  // A node the host has elsewhere: only a contained /dev can take it.
  if (!have_device_nodes())
    GTEST_SKIP() << "the fake driver's device nodes were not made (fixtures built unprivileged)";
  if (::access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "this host has a real /dev/nvidiactl (the fake's numbers)";
  const std::string cdi_v05 = test::cdi_dir(dir, "nvidia-v0.5.json");
  auto refused = capsa(exec(cdi_v05, {"--device", "nvidia.com/gpu=0"}, "echo RAN"));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(lines(refused.err), 1u) << refused.err;
  EXPECT_NE(refused.err.find("device node /dev/nvidiactl"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--contain"), std::string::npos) << refused.err;
}

TEST(CdiExec, ADeviceNodeThatDoesNotMatchTheSpecIsRefused) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "");
  dir.write("cdi/wrong.json",
            R"({"cdiVersion": "0.3.0", "kind": "example.com/null", "devices": [{"name": "n", "containerEdits": )"
            R"({"deviceNodes": [{"path": "/dev/null", "type": "c", "major": 195, "minor": 0}]}}]})");
  auto r = capsa(exec(cdi, {"--device", "example.com/null=n"}, "echo RAN"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err, "capsa: error: example.com/null=n (" + cdi +
                       "/wrong.json): device node /dev/null: the spec says c 195:0, "
                       "/dev/null is c 1:3\n");
}

TEST(CdiExec, AStartContainerHookRunsInTheContainerBeforeTheCommand) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "");
  dir.write("cdi/start.yaml",
            "cdiVersion: 0.5.0\nkind: example.com/hook\ndevices:\n- name: s\n  containerEdits:\n    hooks:\n"
            "    - hookName: startContainer\n      path: /bin/sh\n"
            // Shell builtins only: the hook's environment is its own (no PATH).
            "      args: [sh, -c, 'read -r state; case $state in *created*) s=created;; esac; "
            "echo \"$GREETING $s\" > /tmp/started']\n"
            "      env: [GREETING=hello]\n");
  // /tmp is the container's own (--contain): the hook ran inside, after the root was entered.
  auto r = capsa(exec(cdi, {"--contain", "--device", "example.com/hook=s"}, "cat /tmp/started"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hello created\n") << r.err;
}

TEST(CdiExec, MissingOrFailingHooksAreOneLineNamingTheProgram) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "nvidia-v0.5.json", "/usr/bin/nvidia-ctk-not-installed/nvidia-ctk");
  auto missing = capsa(exec(cdi, {"--contain", "--device", "nvidia.com/gpu=all"}, "echo RAN"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(lines(missing.err), 1u) << missing.err;
  if (have_device_nodes()) {  // else the device node is the first thing found missing
    EXPECT_EQ(missing.err,
              "capsa: error: createContainer hook of nvidia.com/gpu (" + cdi +
                  "/nvidia-v0.5.json): /usr/bin/nvidia-ctk-not-installed/nvidia-ctk is not an executable "
                  "program on this host (install the NVIDIA Container Toolkit, or regenerate the spec with "
                  "`nvidia-ctk cdi generate`)\n");
  }
  test::TempDir other;
  const std::string failing = test::cdi_dir(other, "");
  other.write("cdi/fail.json", R"({"cdiVersion": "0.5.0", "kind": "example.com/hook", "devices": [{"name": "f", )"
                               R"("containerEdits": {"hooks": [{"hookName": "createContainer", "path": ")" +
                                   other / "hook/nvidia-ctk" + R"(", "args": ["nvidia-ctk", "hook", "fail"]}]}}]})");
  auto failed = capsa(exec(failing, {"--device", "example.com/hook=f"}, "echo RAN"));
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_EQ(failed.out, "");
  EXPECT_EQ(failed.err, "capsa: error: createContainer hook of example.com/hook=f (" + failing + "/fail.json): " +
                            other / "hook/nvidia-ctk" + " failed (exit status 3): fake nvidia-ctk: asked to fail\n");
}

TEST(CdiExec, UnknownDevicesAndBrokenSpecsAreOneLine) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "nvidia-v0.8.yaml");
  auto unknown = capsa(exec(cdi, {"--device", "nvidia.com/gpu=7"}, "echo RAN"));
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err,
            "capsa: error: --device nvidia.com/gpu=7: the CDI specs of nvidia.com/gpu have no device \"7\" "
            "(they have: 0, GPU-00000000-0000-0000-0000-000000000000, all)\n");
  test::TempDir other;
  const std::string broken = test::cdi_dir(other, "");
  other.write("cdi/nvidia.yaml",
              "cdiVersion: 0.8.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n"
              "    deviceNodes:\n    - hostPath: /dev/nvidia0\n");
  auto r = capsa(exec(broken, {"--device", "nvidia.com/gpu=all"}, "echo RAN"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err, "capsa: error: --device nvidia.com/gpu=all: " + broken +
                       "/nvidia.yaml: devices[0].containerEdits.deviceNodes[0]: path is missing\n");
  auto none = capsa(exec(other / "nonexistent", {"--device", "nvidia.com/gpu=all"}, "echo RAN"));
  EXPECT_NE(none.exit_code, 0);
  EXPECT_EQ(lines(none.err), 1u) << none.err;
  EXPECT_NE(none.err.find("no CDI spec in " + other / "nonexistent defines nvidia.com/gpu"), std::string::npos)
      << none.err;
}

TEST(CdiExec, PoststopHooksAreRefused) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "");
  dir.write("cdi/stop.json", R"({"cdiVersion": "0.5.0", "kind": "example.com/hook", "devices": [{"name": "p", )"
                             R"("containerEdits": {"hooks": [{"hookName": "poststop", "path": "/bin/true"}]}}]})");
  auto r = capsa(exec(cdi, {"--device", "example.com/hook=p"}, "echo RAN"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err, "capsa: error: poststop hook of example.com/hook=p (" + cdi +
                       "/stop.json): not supported (capsa "
                       "becomes the command and keeps no process to run it afterwards)\n");
}

TEST(CdiExec, DebugPrintsTheDeviceMounts) {
  test::TempDir dir;
  const std::string cdi = test::cdi_dir(dir, "nvidia-v0.5.json");
  if (!have_device_nodes())
    GTEST_SKIP() << "the fake driver's device nodes were not made (fixtures built unprivileged)";
  auto r = capsa(exec(cdi, {"--debug", "--contain", "--device", "nvidia.com/gpu=0"}, "true"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("bind " + fake_nvidia("dev/nvidia0") + " -> /dev/nvidia0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bind " + fake_nvidia("lib/libcuda.so.1") + " -> /usr/lib/x86_64-linux-gnu/libcuda.so.1 (ro)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace capsa::runtime::gpu
