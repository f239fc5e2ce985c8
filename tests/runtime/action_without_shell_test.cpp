// The in-process reading of environment files and runscripts for images without /bin/sh,
// on small files written here: what the shell would have made of them.
#include "runtime/action_without_shell.hpp"

#include <gtest/gtest.h>

#include "image/container_scripts.hpp"
#include "image/directory_files.hpp"
#include "runtime/action_in_process.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

std::string expand(const std::string& word, const EnvMap& env = {}) {
  std::string value;
  EXPECT_TRUE(expand_shell_word(word, env, &value)) << word;
  return value;
}

TEST(ActionWithoutShell, WordsAsPullWritesThem) {
  EXPECT_EQ(expand("\"a \\\"b\\\" \\$c \\`d\\` \\\\e 'f'\""), "a \"b\" $c `d` \\e 'f'");
  EXPECT_EQ(expand("\"${K:-\"fallback value\"}\""), "fallback value");
  EXPECT_EQ(expand("\"${K:-\"fallback value\"}\"", {{"K", "set"}}), "set");
  EXPECT_EQ(expand("'single $quoted'"), "single $quoted");
  EXPECT_EQ(expand("/opt/bin:$PATH", {{"PATH", "/bin"}}), "/opt/bin:/bin");
  EXPECT_EQ(expand("${X}y$"), "y$");
  std::string value;
  EXPECT_FALSE(expand_shell_word("$(id -u)", {}, &value)) << "command substitution needs a shell";
  EXPECT_FALSE(expand_shell_word("a b", {}, &value)) << "two words";
}

// The action script's rules, read leniently: what needs a shell is left out, the rest is
// what an image with a shell gets (set-aside host values, PATH defaults, injection after
// 99-base.sh). ActionInProcess.* compares the strict reading with the real script.
TEST(ActionWithoutShell, EnvironmentFilesFollowTheActionScriptsRules) {
  test::TempDir root;
  std::string env_dir = root / ".singularity.d/env";
  ASSERT_EQ(test::run_process({"mkdir", "-p", env_dir, root / "opt"}).exit_code, 0);
  root.write(".singularity.d/env/10-docker2singularity.sh",
             "#!/bin/sh\nexport PATH=\"/image/bin:/bin\"\nexport GREETING=\"${GREETING:-\"hi there\"}\"\n"
             "export HOSTSET=\"${HOSTSET:-\"image\"}\"\n");
  root.write(".singularity.d/env/90-environment.sh",
             "#!/bin/sh\nlocal_only=1\nexport FROM_LOCAL=\"x$local_only\"\n"
             "if [ -n \"$NOPE\" ]; then\n  export CONDITIONAL=yes\nfi\nif [ -d /opt ]; then export HAS_OPT=yes; fi\n"
             "export COMPUTED=$(date)\nwhile read line; do\n  export LOOPED=$line\ndone\n"
             "if command -v x; then\n  export UNKNOWN_CONDITION=yes\nfi\nTOLD=later\nexport TOLD\nunset GONE\n");
  root.write(".singularity.d/env/99-base.sh", std::string(image::scripts::kEnvFinal));
  const EnvMap process = {{"HOSTSET", "host"}, {"PATH", "/default"}, {"GONE", "x"}, {"HOME", "/home/u"}};
  const EnvMap injected = {{"GREETING", "injected"}};
  EnvMap env =
      environment_without_shell({"exec", &process, &injected, false}, image::DirectoryFiles(root.path()), root.path());
  EXPECT_EQ(env["PATH"], "/image/bin:/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin")
      << "the default entries the image's PATH lacks are appended";
  EXPECT_EQ(env["GREETING"], "injected") << "injected after 99-base.sh";
  EXPECT_EQ(env["HOSTSET"], "image") << "the image's scripts do not see the host's values";
  EXPECT_EQ(env["GONE"], "x") << "the host's value comes back where the image left none";
  EXPECT_EQ(env["FROM_LOCAL"], "x1");
  EXPECT_EQ(env.count("local_only"), 0u) << "plain shell variables are not exported";
  EXPECT_EQ(env.count("CONDITIONAL"), 0u) << "a false condition";
  EXPECT_EQ(env["HAS_OPT"], "yes") << "a true condition";
  EXPECT_EQ(env.count("COMPUTED"), 0u) << "command substitution needs a shell: left out";
  EXPECT_EQ(env.count("LOOPED"), 0u) << "a loop is left out whole";
  EXPECT_EQ(env.count("UNKNOWN_CONDITION"), 0u) << "an if whose condition needs a shell is left out whole";
  EXPECT_EQ(env["TOLD"], "later") << "what follows the left-out lines still applies";
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "/.singularity.d/libs");
  EXPECT_EQ(env["PS1"], "Apptainer> ");
  EXPECT_EQ(env["HOME"], "/home/u");
}

TEST(ActionWithoutShell, DockerRunscriptFollowsDockersRules) {
  test::TempDir root;
  ASSERT_EQ(test::run_process({"mkdir", "-p", root / ".singularity.d"}).exit_code, 0);
  std::string runscript = root.write(".singularity.d/runscript",
                                     "#!/bin/sh\nOCI_ENTRYPOINT='\"/bin/tool\" \"--flag=a b\"'\nOCI_CMD='\"$DEFAULT\"'\n"
                                     "eval \"set ${SINGULARITY_OCI_RUN}\"\nexec \"$@\"\n");
  ASSERT_EQ(test::run_process({"chmod", "755", runscript}).exit_code, 0);
  EnvMap env = {{"DEFAULT", "from-env"}};
  EXPECT_EQ(action_argv_without_shell("run", {}, env, root.path()),
            (std::vector<std::string>{"/bin/tool", "--flag=a b", "from-env"}));
  EXPECT_EQ(action_argv_without_shell("run", {"x y"}, env, root.path()),
            (std::vector<std::string>{"/bin/tool", "--flag=a b", "x y"}));
  EXPECT_TRUE(action_argv_without_shell("test", {}, env, root.path()).empty()) << "no test script: nothing to run";
}

TEST(ActionWithoutShell, SingularitysDockerRunscriptToo) {
  // The runscript Singularity 3.8 wrote into real/busybox_amd64.sif (abridged): CMD only.
  test::TempDir root;
  ASSERT_EQ(test::run_process({"mkdir", "-p", root / ".singularity.d"}).exit_code, 0);
  std::string runscript = root.write(".singularity.d/runscript",
                                     "#!/bin/sh\nOCI_ENTRYPOINT=''\nOCI_CMD='\"sh\"'\nCMDLINE_ARGS=\"\"\n"
                                     "for arg in \"$@\"; do\n    CMDLINE_ARGS=\"${CMDLINE_ARGS} \\\"$arg\\\"\"\ndone\n"
                                     "eval \"set ${SINGULARITY_OCI_RUN}\"\nexec \"$@\"\n");
  ASSERT_EQ(test::run_process({"chmod", "755", runscript}).exit_code, 0);
  EXPECT_EQ(action_argv_without_shell("run", {}, {}, root.path()), (std::vector<std::string>{"sh"}));
  EXPECT_EQ(action_argv_without_shell("run", {"ls", "-l"}, {}, root.path()), (std::vector<std::string>{"ls", "-l"}));
}

TEST(ActionWithoutShell, CommandLookupUsesTheContainersPath) {
  EXPECT_EQ(find_command("sh", {{"PATH", "/nonexistent:/bin"}}), "/bin/sh");
  try {
    find_command("no-such-command", {{"PATH", "/bin:/usr/bin"}});
    ADD_FAILURE() << "found a missing command";
  } catch (const StatusError& e) {
    EXPECT_EQ(e.status(), 127);
    EXPECT_STREQ(e.what(), "\"no-such-command\": executable file not found in $PATH");
  }
}

}  // namespace
}  // namespace capsa::runtime
