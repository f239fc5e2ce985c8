// Debian's Snakemake and cwltool, unchanged, drive capsa installed as `singularity`,
// against the local test registry: the workflow managers check `singularity --version`,
// pull with --name (Snakemake) or --force --name (cwltool), and run each step with the
// flags they always pass (exec --home; exec --contain --ipc --cleanenv --pid --home --pwd).
// Every output is checked to come from inside the image. Root and test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa {
namespace {

using test::ProcessResult;
using test::run_process;

// The Debian test image: bash, /etc/capsa-layer ("3" from its last layer) and
// /usr/local/bin/capsa-hello, neither of which the host has.
std::string debian_reference() { return test::test_registry().plain + "/public/debian:bookworm"; }

class Workflows : public ::testing::Test {
 protected:
  test::TempDir work;

  void SetUp() override {
    for (const char* tool : {"snakemake", "cwltool"})
      ASSERT_TRUE(test::have_program(tool)) << tool << " is missing: scripts/install-deps.sh test installs it";
    std::filesystem::create_directories(work / "bin");
    std::filesystem::create_directories(work / "project");
    // capsa where `singularity` was: the name workflow managers call.
    std::filesystem::create_symlink(test::capsa_binary(), work / "bin/singularity");
  }

  // Runs `argv` in work/project with capsa first on PATH, the plain-HTTP test registry
  // allowed, and a private cache; `extra` adds NAME=VALUE entries.
  ProcessResult run_in_project(const std::vector<std::string>& argv, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> command = {"env",
                                        "-C",
                                        work / "project",
                                        "PATH=" + (work / "bin") + ":" + std::getenv("PATH"),
                                        "APPTAINER_NOHTTPS=1",
                                        "CAPSA_CACHEDIR=" + (work / "cache"),
                                        "XDG_CACHE_HOME=" + (work / "xdg-cache")};
    command.insert(command.end(), extra.begin(), extra.end());
    command.insert(command.end(), argv.begin(), argv.end());
    return run_process(command, "", 600);
  }
};

TEST_F(Workflows, SnakemakeRunsContainerRulesThroughSingularity) {
  work.write("project/input.txt", "from the input file\n");
  std::filesystem::create_directories(work / "data");
  work.write("data/extra.txt", "from a bound directory\n");
  work.write("project/Snakefile",
             "IMAGE = 'docker://" + debian_reference() +
                 "'\n"
                 "rule all:\n"
                 "    input: 'results/layer.txt', 'results/bound.txt', 'results/env.txt'\n"
                 "rule layer:\n"
                 "    output: 'results/layer.txt'\n"
                 "    container: IMAGE\n"
                 "    shell: 'cat /etc/capsa-layer > {output}'\n"
                 "rule bound:\n"
                 "    input: 'input.txt'\n"
                 "    output: 'results/bound.txt'\n"
                 "    container: IMAGE\n"
                 "    shell: 'capsa-hello > {output}; cat /data-in/extra.txt {input} >> {output}'\n"
                 "rule env:\n"
                 "    output: 'results/env.txt'\n"
                 "    container: IMAGE\n"
                 "    shell: 'echo \"$CAPSA_GREETING\" > {output}; echo \"$HOME\" >> {output}'\n");
  auto result = run_in_project({"snakemake", "--use-singularity", "--singularity-args",
                                "-B " + (work / "data") + ":/data-in:ro", "--cores", "1"},
                               {"SINGULARITYENV_CAPSA_GREETING=set through SINGULARITYENV_"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(test::read_file(work / "project/results/layer.txt"), "3\n");
  EXPECT_EQ(test::read_file(work / "project/results/bound.txt"),
            "hello from layer 3\nfrom a bound directory\nfrom the input file\n");
  // Snakemake runs `exec --home $PWD`: the project directory is the container's home.
  EXPECT_EQ(test::read_file(work / "project/results/env.txt"),
            "set through SINGULARITYENV_\n" + (work / "project") + "\n");
  // One pull, named as Snakemake names it (HASH.simg), used by all three rules.
  int images = 0;
  for (const auto& entry : std::filesystem::directory_iterator(work / "project/.snakemake/singularity"))
    if (entry.path().extension() == ".simg") ++images;
  EXPECT_EQ(images, 1);
}

TEST_F(Workflows, CwltoolRunsADockerRequirementThroughSingularity) {
  work.write("project/greeting.txt", "from the CWL input\n");
  work.write("project/tool.cwl",
             "cwlVersion: v1.2\n"
             "class: CommandLineTool\n"
             "requirements:\n"
             "  DockerRequirement:\n"
             "    dockerPull: " +
                 debian_reference() +
                 "\n"
                 "  EnvVarRequirement:\n"
                 "    envDef:\n"
                 "      CAPSA_STEP: from EnvVarRequirement\n"
                 "  ShellCommandRequirement: {}\n"
                 "inputs:\n"
                 "  greeting:\n"
                 "    type: File\n"
                 "arguments:\n"
                 "  - valueFrom: >-\n"
                 "      cat /etc/capsa-layer > layer.txt;\n"
                 "      capsa-hello > hello.txt;\n"
                 "      cat $(inputs.greeting.path) >> hello.txt;\n"
                 "      echo \"$CAPSA_STEP $HOST_ONLY\" > env.txt;\n"
                 "      echo $$ >> env.txt\n"
                 "    shellQuote: false\n"
                 "outputs:\n"
                 "  layer: {type: File, outputBinding: {glob: layer.txt}}\n"
                 "  hello: {type: File, outputBinding: {glob: hello.txt}}\n"
                 "  env: {type: File, outputBinding: {glob: env.txt}}\n");
  work.write("project/job.yml", "greeting: {class: File, path: greeting.txt}\n");
  std::filesystem::create_directories(work / "project/out");
  auto result = run_in_project({"cwltool", "--singularity", "--outdir", work / "project/out", "tool.cwl", "job.yml"},
                               {"HOST_ONLY=must-not-pass", "TMPDIR=" + work.path()});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(test::read_file(work / "project/out/layer.txt"), "3\n");
  EXPECT_EQ(test::read_file(work / "project/out/hello.txt"), "hello from layer 3\nfrom the CWL input\n");
  // --cleanenv keeps the host's variables out; --pid makes the step's shell an early PID.
  std::string env = test::read_file(work / "project/out/env.txt");
  EXPECT_EQ(env.substr(0, env.find('\n')), "from EnvVarRequirement ") << env;
  EXPECT_LT(std::stoi(env.substr(env.find('\n') + 1)), 10) << "a PID namespace of its own: " << env;
  // cwltool pulled with `pull --force --name NAME.sif` into the working directory.
  bool pulled = false;
  for (const auto& entry : std::filesystem::directory_iterator(work / "project"))
    if (entry.path().extension() == ".sif") pulled = true;
  EXPECT_TRUE(pulled) << result.err;
}

}  // namespace
}  // namespace capsa
