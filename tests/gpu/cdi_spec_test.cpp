// The CDI spec reader (runtime/gpu/cdi_spec.hpp) and the device lookup over spec
// directories (cdi_registry.hpp): specs shaped like nvidia-ctk's, in JSON (v0.5) and YAML
// (v0.8), and broken ones, each refused in one line naming the file and the entry.
#include <gtest/gtest.h>

#include "cdi_fixture.hpp"
#include "runtime/gpu/cdi_registry.hpp"
#include "runtime/gpu/cdi_spec.hpp"
#include "util/error.hpp"

namespace capsa::runtime::gpu {
namespace {

std::string error_of(const std::string& text, CdiFormat format = CdiFormat::Json) {
  try {
    parse_cdi_spec(text, "/etc/cdi/x.json", format);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

CdiSpec nvidia_spec(const std::string& name) {
  test::TempDir dir;
  std::string cdi = test::cdi_dir(dir, name);
  return parse_cdi_spec(test::read_file(cdi + "/" + name), cdi + "/" + name, *cdi_format_of(name));
}

void expect_nvidia_shape(const CdiSpec& spec) {
  EXPECT_EQ(spec.kind, "nvidia.com/gpu");
  ASSERT_EQ(spec.devices.size(), 3u);
  EXPECT_EQ(spec.devices[0].name, "0");
  EXPECT_EQ(spec.devices[2].name, "all");
  ASSERT_EQ(spec.devices[0].edits.device_nodes.size(), 1u);
  EXPECT_EQ(spec.devices[0].edits.device_nodes[0].path, "/dev/nvidia0");
  EXPECT_EQ(spec.devices[0].edits.device_nodes[0].host_path, test::fake_nvidia("dev/nvidia0"));
  EXPECT_EQ(spec.edits.env, std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=void"});
  ASSERT_EQ(spec.edits.mounts.size(), 3u);
  EXPECT_EQ(spec.edits.mounts[0].container_path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(spec.edits.mounts[0].options, (std::vector<std::string>{"ro", "nosuid", "nodev", "bind"}));
  ASSERT_EQ(spec.edits.hooks.size(), 2u);
  EXPECT_EQ(spec.edits.hooks[0].hook_name, "createContainer");
  EXPECT_EQ(spec.edits.hooks[0].args.size(), 5u);
  EXPECT_EQ(spec.edits.hooks[0].env, std::vector<std::string>{"NVIDIA_CTK_DEBUG=false"});
  EXPECT_EQ(spec.edits.hooks[1].args[2], "update-ldcache");
}

TEST(CdiSpec, ReadsAV05JsonSpecLikeNvidiaCtks) {
  CdiSpec spec = nvidia_spec("nvidia-v0.5.json");
  EXPECT_EQ(spec.version, "0.5.0");
  expect_nvidia_shape(spec);
}

TEST(CdiSpec, ReadsAV08YamlSpecLikeNvidiaCtks) {
  CdiSpec spec = nvidia_spec("nvidia-v0.8.yaml");
  EXPECT_EQ(spec.version, "0.8.0");
  expect_nvidia_shape(spec);  // quoted "0" stays a name; a plain list and a flow list read alike
}

TEST(CdiSpec, DeviceNodeNumbersAndHookTimeoutsAreIntegers) {
  CdiSpec spec = parse_cdi_spec(
      "cdiVersion: 0.6.0\nkind: vendor.com/dev\ndevices:\n- name: x\n  containerEdits:\n    deviceNodes:\n"
      "    - {path: /dev/x, type: c, major: 195, minor: 0, permissions: rw, fileMode: 438}\n"
      "    hooks:\n    - {hookName: startContainer, path: /bin/true, timeout: 5}\n",
      "s.yaml", CdiFormat::Yaml);
  const CdiDeviceNode& node = spec.devices[0].edits.device_nodes[0];
  EXPECT_EQ(node.type, "c");
  EXPECT_EQ(node.major, 195);
  EXPECT_EQ(node.minor, 0);
  EXPECT_EQ(node.file_mode, 438u);
  EXPECT_EQ(spec.devices[0].edits.hooks[0].timeout, 5);
}

TEST(CdiSpec, MalformedSpecsAreOneLineNamingFileAndEntry) {
  const std::string head = R"({"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [)";
  EXPECT_EQ(error_of(head + R"({"name": "0", "containerEdits": {"mountz": []}}]})"),
            "/etc/cdi/x.json: devices[0].containerEdits: unknown field \"mountz\"");
  EXPECT_EQ(error_of(head + R"({"name": "0", "containerEdits": {"mounts": [{"containerPath": "/x"}]}}]})"),
            "/etc/cdi/x.json: devices[0].containerEdits.mounts[0]: hostPath is missing");
  EXPECT_EQ(error_of(head + R"({"name": "0", "containerEdits": {"hooks": [{"hookName": "later", "path": "/x"}]}}]})"),
            "/etc/cdi/x.json: devices[0].containerEdits.hooks[0]: hookName \"later\" is not an OCI hook");
  EXPECT_EQ(error_of(head +
                     R"({"name": "0", "containerEdits": {"hooks": [{"hookName": "createContainer", "path": "x"}]}}]})"),
            "/etc/cdi/x.json: devices[0].containerEdits.hooks[0]: path \"x\" must be absolute");
  EXPECT_EQ(error_of(head + R"({"name": "0", "containerEdits": {"env": ["=x"]}}]})"),
            "/etc/cdi/x.json: devices[0].containerEdits: env: \"=x\" is not NAME=VALUE");
  EXPECT_EQ(
      error_of(head + R"({"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/x", "major": "a"}]}}]})"),
      "/etc/cdi/x.json: devices[0].containerEdits.deviceNodes[0]: major must be an integer");
  EXPECT_EQ(error_of(head + R"({"name": "0", "containerEdits": {}}]})"),
            "/etc/cdi/x.json: devices[0]: device \"0\" has no containerEdits");
  EXPECT_EQ(error_of(head + R"({"name": "-x", "containerEdits": {"env": ["A=1"]}}]})"),
            "/etc/cdi/x.json: devices[0]: name \"-x\" is not a valid CDI device name");
  EXPECT_EQ(
      error_of(
          head +
          R"({"name": "a", "containerEdits": {"env": ["A=1"]}}, {"name": "a", "containerEdits": {"env": ["A=1"]}}]})"),
      "/etc/cdi/x.json: devices[1]: device \"a\" is defined twice");
  EXPECT_EQ(error_of(R"({"cdiVersion": "0.5.0", "kind": "gpu", "devices": []})"),
            "/etc/cdi/x.json: kind \"gpu\" is not VENDOR/CLASS (e.g. nvidia.com/gpu)");
  EXPECT_EQ(error_of(R"({"cdiVersion": "0.5.0", "kind": "a.com/b", "devices": []})"),
            "/etc/cdi/x.json: devices must be a non-empty list");
  EXPECT_EQ(error_of(R"({"cdiVersion": "2.0.0", "kind": "a.com/b"})"),
            "/etc/cdi/x.json: cdiVersion \"2.0.0\" is not a CDI version capsa reads (0.3.0 to 1.1.0)");
  EXPECT_EQ(error_of(R"({"kind": "a.com/b"})"), "/etc/cdi/x.json: cdiVersion is missing");
  EXPECT_EQ(error_of(R"({"cdiVersion": "0.5.0", "kind": "a.com/b", "devices": [{"name": "x"}], "extra": 1})"),
            "/etc/cdi/x.json: devices[0]: device \"x\" has no containerEdits");
  EXPECT_EQ(
      error_of(
          R"({"cdiVersion": "0.5.0", "kind": "a.com/b", "devices": [{"name": "x", "containerEdits": {"env": ["A=1"]}}], "extra": 1})"),
      "/etc/cdi/x.json: unknown field \"extra\"");
  EXPECT_EQ(error_of(R"({"cdiVersion": "0.5.0", )"), "/etc/cdi/x.json: not valid JSON (at byte 25)");
  EXPECT_EQ(error_of("[1, 2]"), "/etc/cdi/x.json: expected an object");
  EXPECT_EQ(
      error_of("cdiVersion: 0.5.0\nkind: [a\n", CdiFormat::Yaml).rfind("/etc/cdi/x.json: not valid YAML (line ", 0),
      0u);
  EXPECT_EQ(error_of("", CdiFormat::Yaml), "/etc/cdi/x.json: expected an object");
}

TEST(CdiSpec, ANumberNoTypeHoldsIsAnErrorNotACrash) {
  // Found by fuzz_cdi_spec: nlohmann-json throws out_of_range (406), not parse_error.
  const std::string error =
      error_of(R"({"cdiVersion": "0.5.0", "kind": "a.b/c", "devices": [66666666666666e6666666]})");
  EXPECT_EQ(error.rfind("/etc/cdi/x.json: not valid JSON", 0), 0u) << error;
}

TEST(CdiSpec, FieldsNewerThanTheDeclaredVersionAreRefused) {
  auto spec = [](const std::string& version, const std::string& edits) {
    return R"({"cdiVersion": ")" + version + R"(", "kind": "a.com/b", "devices": [{"name": "x", "containerEdits": )" +
           edits + "}]}";
  };
  const std::string host_path = R"({"deviceNodes": [{"path": "/dev/x", "hostPath": "/dev/y"}]})";
  EXPECT_EQ(error_of(spec("0.4.0", host_path)),
            "/etc/cdi/x.json: devices[0].containerEdits.deviceNodes[0].hostPath needs cdiVersion 0.5.0 or later, the "
            "file says 0.4.0");
  EXPECT_EQ(error_of(spec("0.5.0", host_path)), "no error");
  EXPECT_EQ(
      error_of(spec("0.6.0", R"({"additionalGids": [5]})")),
      "/etc/cdi/x.json: devices[0].containerEdits.additionalGids needs cdiVersion 0.7.0 or later, the file says 0.6.0");
  EXPECT_EQ(error_of(spec("v0.8.0", R"({"additionalGids": [5]})")), "no error");
  EXPECT_EQ(
      error_of(
          R"({"cdiVersion": "0.4.0", "kind": "a.com/b", "devices": [{"name": "0", "containerEdits": {"env": ["A=1"]}}]})"),
      "/etc/cdi/x.json: devices[0].name starting with a digit needs cdiVersion 0.5.0 or later, the file says 0.4.0");
}

TEST(CdiName, QualifiedNamesAreSplitAndBadOnesExplained) {
  std::string why;
  auto name = parse_cdi_name("nvidia.com/gpu=GPU-0a:1", &why);
  ASSERT_TRUE(name);
  EXPECT_EQ(name->kind, "nvidia.com/gpu");
  EXPECT_EQ(name->name, "GPU-0a:1");
  EXPECT_FALSE(parse_cdi_name("nvidia.com/gpu", &why));
  EXPECT_EQ(why, "expected VENDOR/CLASS=NAME, e.g. nvidia.com/gpu=all");
  EXPECT_FALSE(parse_cdi_name("gpu=0", &why));
  EXPECT_FALSE(parse_cdi_name("nvidia.com/gpu=", &why));
  EXPECT_FALSE(parse_cdi_name("nvidia.com/gpu=a/b", &why));
  EXPECT_FALSE(parse_cdi_name("-x.com/gpu=0", &why));
  EXPECT_EQ(why, "the vendor \"-x.com\" is not valid");
}

// Spec directories: a device is looked up by name, the later directory wins, one
// directory defining a device twice is an error, and so is an unknown name.
class CdiRegistry : public ::testing::Test {
 protected:
  std::string spec(const std::string& kind, const std::string& name, const std::string& env) {
    return R"({"cdiVersion": "0.5.0", "kind": ")" + kind + R"(", "devices": [{"name": ")" + name +
           R"(", "containerEdits": {"env": [")" + env + R"("]}}], "containerEdits": {"env": ["COMMON=)" + kind +
           R"("]}})";
  }
  std::vector<CdiSelection> resolve(const std::vector<std::string>& names) {
    return resolve_cdi_devices(names, {dir / "etc", dir / "run"}, warnings);
  }
  std::string error(const std::vector<std::string>& names) {
    try {
      resolve(names);
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  }
  void SetUp() override { test::run_process({"mkdir", "-p", dir / "etc", dir / "run"}); }
  test::TempDir dir;
  std::vector<std::string> warnings;
};

TEST_F(CdiRegistry, CommonEditsComeOnceBeforeTheFirstDeviceOfTheirSpec) {
  dir.write("etc/a.json", spec("a.com/x", "one", "ONE=1"));
  dir.write(
      "etc/b.json",
      R"({"cdiVersion": "0.5.0", "kind": "a.com/x", "devices": [{"name": "two", "containerEdits": {"env": ["TWO=2"]}}]})");
  auto selections = resolve({"a.com/x=two", "a.com/x=one", "a.com/x=two"});
  ASSERT_EQ(selections.size(), 3u);
  EXPECT_EQ(selections[0].origin, "a.com/x=two (" + dir / "etc/b.json)");
  EXPECT_EQ(selections[1].origin, "a.com/x (" + dir / "etc/a.json)");
  EXPECT_EQ(selections[2].edits.env, std::vector<std::string>{"ONE=1"});
  EXPECT_TRUE(warnings.empty());
}

TEST_F(CdiRegistry, TheLaterDirectoryWins) {
  dir.write("etc/a.json", spec("a.com/x", "one", "FROM=etc"));
  dir.write("run/a.yaml",
            "cdiVersion: 0.5.0\nkind: a.com/x\ndevices:\n- name: one\n  containerEdits:\n    env: [FROM=run]\n");
  auto selections = resolve({"a.com/x=one"});
  ASSERT_EQ(selections.size(), 1u);  // and not the common edits of the spec that lost
  EXPECT_EQ(selections[0].edits.env, std::vector<std::string>{"FROM=run"});
  EXPECT_EQ(selections[0].origin, "a.com/x=one (" + dir / "run/a.yaml)");
}

TEST_F(CdiRegistry, UnknownNamesAndConflictsAreOneLine) {
  dir.write("etc/a.json", spec("a.com/x", "one", "A=1"));
  dir.write("etc/b.json", spec("a.com/x", "one", "B=1"));
  dir.write("etc/c.json", spec("a.com/y", "two", "C=1"));
  EXPECT_EQ(error({"a.com/x=one"}),
            "--device a.com/x=one: defined twice, in " + dir / "etc/a.json and " + dir / "etc/b.json");
  EXPECT_EQ(error({"a.com/y=three"}),
            "--device a.com/y=three: the CDI specs of a.com/y have no device \"three\" (they have: two)");
  EXPECT_EQ(error({"b.com/z=0"}), "--device b.com/z=0: no CDI spec in " + dir / "etc, " + dir / "run" +
                                      " defines b.com/z (generate one, e.g. `nvidia-ctk cdi generate "
                                      "--output=/etc/cdi/nvidia.yaml`, or give --cdi-dirs)");
  EXPECT_EQ(error({"nvidia.com/gpu"}),
            "--device nvidia.com/gpu: not a CDI device name: expected VENDOR/CLASS=NAME, e.g. nvidia.com/gpu=all");
}

TEST_F(CdiRegistry, AllMeansEveryDeviceOfTheKindWhenTheSpecHasNoDeviceAll) {
  dir.write("etc/a.yaml",
            "cdiVersion: 0.5.0\nkind: a.com/x\ndevices:\n- {name: '0', containerEdits: {env: [D=0]}}\n"
            "- {name: '1', containerEdits: {env: [D=1]}}\n");
  auto selections = resolve({"a.com/x=all"});
  ASSERT_EQ(selections.size(), 2u);
  EXPECT_EQ(selections[0].edits.env, std::vector<std::string>{"D=0"});
  EXPECT_EQ(selections[1].edits.env, std::vector<std::string>{"D=1"});
}

TEST_F(CdiRegistry, ABrokenSpecOfTheKindAskedForIsTheError) {
  dir.write("etc/broken.yaml",
            "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n  containerEdits:\n    mounts:\n    - "
            "containerPath: /x\n");
  dir.write("etc/other.json", "{ not json");
  EXPECT_EQ(error({"nvidia.com/gpu=all"}),
            "--device nvidia.com/gpu=all: " +
                dir / "etc/broken.yaml: devices[0].containerEdits.mounts[0]: hostPath is missing");
  // Found in a good spec: the broken one of the same kind is a warning, other kinds' files are not read twice.
  dir.write("run/good.json", spec("nvidia.com/gpu", "all", "A=1"));
  EXPECT_EQ(resolve({"nvidia.com/gpu=all"}).size(), 2u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "ignoring a broken CDI spec: " +
                             dir / "etc/broken.yaml: devices[0].containerEdits.mounts[0]: hostPath is missing");
}

}  // namespace
}  // namespace capsa::runtime::gpu
