// The generated /.singularity.d files are run for real with the host's /bin/sh: the
// runscript must combine ENTRYPOINT, CMD and arguments the way Docker and Apptainer do.
#include "image/container_files.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::image {
namespace {

using nlohmann::json;
using test::run_process;
using test::TempDir;

std::string run_runscript(const json& config, const std::vector<std::string>& args) {
  TempDir dir;
  std::string script = dir.write("runscript", docker_runscript(config));
  std::vector<std::string> argv = {"/bin/sh", script};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = run_process(argv, "", 10);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out;
}

const char* kPrintArgs = "/usr/bin/printf";

TEST(DockerRunscript, CmdOnlyRunsCmdOrTheArgumentsInstead) {
  json config = {{"Cmd", {kPrintArgs, "[%s]", "default"}}};
  EXPECT_EQ(run_runscript(config, {}), "[default]");
  EXPECT_EQ(run_runscript(config, {kPrintArgs, "<%s>", "mine"}), "<mine>");
}

TEST(DockerRunscript, EntrypointOnlyAppendsTheArguments) {
  json config = {{"Entrypoint", {kPrintArgs, "[%s]"}}};
  EXPECT_EQ(run_runscript(config, {}), "[]");  // printf with no argument
  EXPECT_EQ(run_runscript(config, {"a", "b"}), "[a][b]");
}

TEST(DockerRunscript, EntrypointWithCmdAsDefaultArguments) {
  json config = {{"Entrypoint", {kPrintArgs, "[%s]"}}, {"Cmd", {"x", "y z"}}};
  EXPECT_EQ(run_runscript(config, {}), "[x][y z]");
  EXPECT_EQ(run_runscript(config, {"only"}), "[only]");
}

TEST(DockerRunscript, ArgumentsPassVerbatimWhileCmdGetsOneShellEvaluation) {
  json config = {{"Entrypoint", {kPrintArgs, "[%s]"}}, {"Cmd", {"$CAPSA_TEST_WORD"}}};
  TempDir dir;
  std::string script = dir.write("runscript", docker_runscript(config));
  auto evaluated = run_process({"/usr/bin/env", "CAPSA_TEST_WORD=expanded", "/bin/sh", script}, "", 10);
  EXPECT_EQ(evaluated.out, "[expanded]");
  auto verbatim = run_process({"/bin/sh", script, "$HOME", "it's \"quoted\"", "`id`", "a\\b"}, "", 10);
  EXPECT_EQ(verbatim.out, "[$HOME][it's \"quoted\"][`id`][a\\b]");
}

TEST(DockerRunscript, QuotesInEntrypointSurvive) {
  json config = {{"Entrypoint", {kPrintArgs, "[%s]", "it's", "say \"hi\"", "back\\slash"}}};
  EXPECT_EQ(run_runscript(config, {}), "[it's][say \"hi\"][back\\slash]");
}

TEST(DockerRunscript, NoEntrypointNoCmdNoArgumentsIsAClearError) {
  TempDir dir;
  std::string script = dir.write("runscript", docker_runscript(json::object()));
  auto result = run_process({"/bin/sh", script}, "", 10);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("no ENTRYPOINT or CMD"), std::string::npos) << result.err;
}

TEST(DockerRunscript, KeepsTheLineApptainerRecognises) {
  EXPECT_NE(docker_runscript(json::object()).find("eval \"set ${SINGULARITY_OCI_RUN}\"\n"), std::string::npos);
}

TEST(DockerEnvironment, PathIsSetAndOtherVariablesYieldToTheCaller) {
  json config = {{"Env", {"PATH=/opt/x/bin:/usr/bin:/bin", "FOO=from image", "QUOTED=a\"b$c", "1BAD=x", "NOEQUALS"}}};
  TempDir dir;
  std::string env = dir.write("10-docker2singularity.sh", docker_environment(config));
  std::string probe = ". " + env + "; printf '%s|%s|%s' \"$PATH\" \"$FOO\" \"$QUOTED\"";
  auto fresh = run_process({"/usr/bin/env", "-i", "/bin/sh", "-c", probe}, "", 10);
  EXPECT_EQ(fresh.out, "/opt/x/bin:/usr/bin:/bin|from image|a\"b$c");
  auto preset = run_process({"/usr/bin/env", "-i", "FOO=mine", "PATH=/host", "/bin/sh", "-c", probe}, "", 10);
  EXPECT_EQ(preset.out, "/opt/x/bin:/usr/bin:/bin|mine|a\"b$c");
  EXPECT_EQ(docker_environment(config).find("1BAD"), std::string::npos);
}

TEST(ContainerFiles, LabelsMergeImageLabelsWithBuildLabels) {
  OciSource source;
  source.config = {{"Labels", {{"maintainer", "someone"}, {"org.label-schema.schema-version", "9"}}}};
  source.reference = "busybox:1.36";
  source.architecture = "amd64";
  source.capsa_version = "0.1.0";
  auto labels = docker_labels(source);
  EXPECT_EQ(labels["maintainer"], "someone");
  EXPECT_EQ(labels["org.label-schema.schema-version"], "1.0");
  EXPECT_EQ(labels["org.label-schema.usage.singularity.deffile.from"], "busybox:1.36");
  EXPECT_EQ(labels["org.label-schema.build-arch"], "amd64");
  EXPECT_EQ(labels_json({{"b", "2"}, {"a", "1\"x"}}), "{\n\t\"a\": \"1\\\"x\",\n\t\"b\": \"2\"\n}");
  EXPECT_EQ(labels_json({}), "{}");
}

TEST(ContainerFiles, LayoutHasEveryFileApptainerImagesCarry) {
  OciSource source;
  source.config = {{"Cmd", {"sh"}}, {"Env", {"PATH=/bin"}}};
  source.reference = "busybox:1.36";
  auto files = container_files_for_oci(source);
  auto find = [&](const std::string& path) {
    auto it = std::find_if(files.begin(), files.end(), [&](const ContainerFile& f) { return f.path == path; });
    return it == files.end() ? nullptr : &*it;
  };
  for (const char* path : {"/.singularity.d/actions/exec", "/.singularity.d/actions/run", "/.singularity.d/actions/shell",
                           "/.singularity.d/actions/test", "/.singularity.d/env/01-base.sh",
                           "/.singularity.d/env/10-docker2singularity.sh", "/.singularity.d/env/90-environment.sh",
                           "/.singularity.d/env/99-base.sh", "/.singularity.d/runscript", "/.singularity.d/labels.json",
                           "/.singularity.d/Singularity"}) {
    ASSERT_NE(find(path), nullptr) << path;
    EXPECT_EQ(find(path)->kind, ContainerFile::Kind::File) << path;
  }
  EXPECT_EQ(find("/.singularity.d/Singularity")->content, "bootstrap: docker\nfrom: busybox:1.36\n\n");
  EXPECT_EQ(find("/singularity")->content, ".singularity.d/runscript");
  EXPECT_TRUE(find("/tmp")->only_if_missing);
  EXPECT_EQ(find("/tmp")->mode, 01777u);
  EXPECT_TRUE(find("/etc/resolv.conf")->only_if_missing);
  EXPECT_FALSE(find("/.singularity.d/runscript")->only_if_missing);
  // Parents come before children, so the tree can be built in one pass.
  auto index_of = [&](const std::string& path) { return find(path) - files.data(); };
  EXPECT_LT(index_of("/.singularity.d"), index_of("/.singularity.d/env"));
  EXPECT_LT(index_of("/.singularity.d/env"), index_of("/.singularity.d/env/99-base.sh"));
  EXPECT_LT(index_of("/var"), index_of("/var/tmp"));
}

TEST(ContainerFiles, ActionScriptsSourceTheEnvironmentAndRun) {
  // Run the generated exec action against a throwaway tree: it must source env/*.sh in
  // order. The scripts use absolute /.singularity.d paths, so rewrite them into the tree.
  TempDir dir;
  OciSource source;
  source.config = {{"Env", {"GREETING=hello"}}};
  std::string exec_script;
  for (const auto& f : container_files_for_oci(source))
    if (f.path == "/.singularity.d/actions/exec") exec_script = f.content;
  std::string env_dir = dir.path() + "/env";
  std::filesystem::create_directories(env_dir);
  dir.write("env/10-docker2singularity.sh", docker_environment(source.config));
  std::string rewritten = exec_script;
  rewritten.replace(rewritten.find("/.singularity.d/env"), 19, env_dir);
  std::string script = dir.write("exec", rewritten);
  auto result = run_process({"/usr/bin/env", "-i", "/bin/sh", script, "/bin/sh", "-c", "printf %s \"$GREETING\""}, "", 10);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "hello");
}

}  // namespace
}  // namespace capsa::image
