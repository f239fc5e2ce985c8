// `exec` composes the environment in-process and starts the command without the image's
// /bin/sh (runtime/action_in_process.hpp). The command must get exactly what the action
// script gives it: every case here runs both ways (CAPSA_ACTION_SHELL=1 forces the
// script) and compares the whole environment. Root and test user.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <map>

#include "image/container_scripts.hpp"
#include "runtime/run_support.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;
using testing::lines_of;

constexpr const char* kThroughShell = "the action runs through /bin/sh";

class ActionInProcess : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    // One tree as a SIF and as a sandbox directory: the two ways its files are read.
    const std::vector<testing::ImageFile> scripted_files = {
        {"/.singularity.d/env/10-docker2singularity.sh",
         "#!/bin/sh\nexport PATH=\"/docker/bin:/usr/bin\"\nexport FROM_DOCKER=\"${FROM_DOCKER:-\"docker default\"}\"\n",
         0755},
        {"/.singularity.d/env/50-local.sh",
         "#!/bin/sh\n# plain shell variables stay in the shell\nlocal_only=1\nexport SEEN=\"[${FOO:-}|$local_only]\"\n"
         "[ -d /etc ] && export HAS_ETC=yes\nif [ -n \"${SELECTOR:-}\" ]; then export SELECTED=\"$SELECTOR\"; fi\n"
         "EMPTIED=\nexport EMPTIED\nFOO_IMAGE=image; export FOO_IMAGE\n",
         0755},
        {"/.singularity.d/env/90-environment.sh", "#!/bin/sh\n# Custom environment shell code should follow\n\n", 0755},
        {"/.singularity.d/env/99-base.sh",
         "#!/bin/sh\nif [ -z \"$LD_LIBRARY_PATH\" ]; then LD_LIBRARY_PATH=/.singularity.d/libs; "
         "else LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH:/.singularity.d/libs\"; fi\nPS1=\"Image> \"\nexport LD_LIBRARY_PATH "
         "PS1\n",
         0755},
        {"/.singularity.d/env/99-zz-last.sh", "#!/bin/sh\nexport SEEN_INJECTED=\"[${INJECTED:-}]\"\n", 0755}};
    scripted_ = testing::make_image(*dir_, "scripted", scripted_files);
    scripted_sandbox_ = testing::make_sandbox(*dir_, "scripted-sandbox", scripted_files);
    // What capsa's pull and build write into every image.
    capsa_written_ = testing::make_image(
        *dir_, "capsa-written",
        {{"/.singularity.d/env/01-base.sh", std::string(image::scripts::kEnvBase), 0755},
         {"/.singularity.d/env/10-docker2singularity.sh",
          "#!/bin/sh\nexport PATH=\"/opt/tool/bin:/usr/local/bin:/usr/bin:/bin\"\n"
          "export LANG=\"${LANG:-\"C.UTF-8\"}\"\nexport TOOL_HOME=\"${TOOL_HOME:-\"/opt/tool\"}\"\n",
          0755},
         {"/.singularity.d/env/90-environment.sh", std::string(image::scripts::kEnvEnvironment), 0755},
         {"/.singularity.d/env/94-appsbase.sh", "", 0755},
         {"/.singularity.d/env/95-apps.sh", std::string(image::scripts::kEnvApps), 0755},
         {"/.singularity.d/env/99-base.sh", std::string(image::scripts::kEnvFinal), 0755},
         {"/.singularity.d/env/99-runtimevars.sh", std::string(image::scripts::kEnvRuntimeVars), 0755}});
    bare_ = testing::make_image(*dir_, "bare", {});
    needs_shell_ = testing::make_image(
        *dir_, "needs-shell",
        {{"/.singularity.d/env/90-environment.sh", "#!/bin/sh\nexport COMPUTED=\"$(echo computed)\"\n", 0755}});
  }
  static void TearDownTestSuite() { delete dir_; }

  // `env` in the container, as a map, without what depends on the shell itself.
  static std::map<std::string, std::string> environment(const std::string& image, const std::vector<std::string>& flags,
                                                        std::vector<std::string> env, bool through_shell) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(image);
    args.push_back("env");
    if (through_shell) env.push_back("CAPSA_ACTION_SHELL=1");
    else args.insert(args.begin() + 1, "--debug");
    auto result = capsa(args, env);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    if (!through_shell) EXPECT_EQ(result.err.find(kThroughShell), std::string::npos) << result.err;
    std::map<std::string, std::string> out;
    for (const auto& line : lines_of(result.out)) {
      auto eq = line.find('=');
      if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    }
    // SHLVL: busybox's and bash's sh raise it; `_`: bash sets it to the command.
    for (const char* shell_own : {"SHLVL", "_", "CAPSA_ACTION_SHELL"}) out.erase(shell_own);
    return out;
  }

  static test::TempDir* dir_;
  static std::string scripted_, scripted_sandbox_, capsa_written_, bare_, needs_shell_;
};
test::TempDir* ActionInProcess::dir_ = nullptr;
std::string ActionInProcess::scripted_, ActionInProcess::scripted_sandbox_, ActionInProcess::capsa_written_,
    ActionInProcess::bare_, ActionInProcess::needs_shell_;

struct Case {
  const char* name;
  std::vector<std::string> flags;
  std::vector<std::string> env;
};

TEST_F(ActionInProcess, TheCommandGetsWhatTheActionScriptGives) {
  const std::vector<Case> cases = {
      {"host values", {},
       {"FOO=bar", "FROM_DOCKER=host", "EMPTIED=host", "PS1=host> ", "PROMPT_COMMAND=echo hi", "LD_LIBRARY_PATH=/host/lib",
        "PATH=/host/bin:/usr/bin:/bin", "EMPTY=", "LANG=de_DE.UTF-8", "SELECTOR=chosen"}},
      {"injected", {"--env", "Z=3,INJECTED=yes"},
       {"SINGULARITYENV_X=1", "APPTAINERENV_Y=$HOME/y", "APPTAINERENV_PREPEND_PATH=/pre", "APPTAINERENV_APPEND_PATH=/app",
        "APPTAINERENV_LD_LIBRARY_PATH=/inj/lib", "APPTAINERENV_PREPEND_LD_LIBRARY_PATH=/p",
        "APPTAINERENV_APPEND_LD_LIBRARY_PATH=/a", "APPTAINERENV_TOOL_HOME=/injected/tool", "-u PS1", "-u PROMPT_COMMAND"}},
      {"PATH replaced", {}, {"APPTAINERENV_PATH=/only:/bin"}},
      {"cleanenv", {"--cleanenv"},
       {"-i", "HOME=/tmp", "PATH=/usr/bin:/bin", "TERM=dumb", "LANG=C.UTF-8", "APPTAINERENV_K=v"}},
      {"pwd and home", {"--pwd", "/etc", "--no-home"}, {"PWD=/nonexistent"}},
  };
  for (const std::string& image : {busybox_sif(), scripted_, scripted_sandbox_, capsa_written_, bare_}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(image + ": " + c.name);
      auto in_process = environment(image, c.flags, c.env, false);
      auto through_shell = environment(image, c.flags, c.env, true);
      EXPECT_EQ(in_process, through_shell);
      EXPECT_FALSE(in_process.empty());
    }
  }
}

TEST_F(ActionInProcess, ASandboxGivesWhatItsSifGives) {
  // The SIF's files are read from its squashfs, the sandbox's from the directory.
  for (bool through_shell : {false, true}) {
    auto from_sif = environment(scripted_, {}, {"FOO=bar", "SELECTOR=chosen"}, through_shell);
    auto from_sandbox = environment(scripted_sandbox_, {}, {"FOO=bar", "SELECTOR=chosen"}, through_shell);
    for (const char* prefix : {"APPTAINER_", "SINGULARITY_"})
      for (const char* names_the_image : {"CONTAINER", "NAME"}) {
        from_sif.erase(std::string(prefix) + names_the_image);
        from_sandbox.erase(std::string(prefix) + names_the_image);
      }
    EXPECT_EQ(from_sif, from_sandbox) << (through_shell ? "through the shell" : "in process");
    EXPECT_EQ(from_sandbox["SEEN"], "[|1]") << "the image's own scripts, not the host's FOO";
  }
}

TEST_F(ActionInProcess, TheImagesShellIsNotStarted) {
  for (const std::string& image : {busybox_sif(), scripted_, scripted_sandbox_, capsa_written_, bare_}) {
    auto result = capsa({"exec", "--debug", image, "true"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err.find(kThroughShell), std::string::npos) << image << ":\n" << result.err;
  }
}

TEST_F(ActionInProcess, AnEnvironmentFileBoundIntoTheContainerIsRead) {
  // The files are read from the SIF itself unless a mount can cover them.
  test::TempDir host;
  std::string script = host.write("mine.sh", "export MINE=bound\n");
  ASSERT_EQ(::chmod(host.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(script.c_str(), 0644), 0);
  for (const std::string& image : {busybox_sif(), capsa_written_}) {
    auto in_process = environment(image, {"-B", script + ":/.singularity.d/env/50-mine.sh"}, {}, false);
    EXPECT_EQ(in_process["MINE"], "bound") << image;
    EXPECT_EQ(in_process, environment(image, {"-B", script + ":/.singularity.d/env/50-mine.sh"}, {}, true)) << image;
  }
}

TEST_F(ActionInProcess, WhatOnlyAShellKnowsStillGoesThroughIt) {
  auto computed = capsa({"exec", "--debug", needs_shell_, "sh", "-c", "echo $COMPUTED"});
  EXPECT_EQ(computed.out, "computed\n") << computed.err;
  EXPECT_NE(computed.err.find(std::string(kThroughShell) + ": /.singularity.d/env/90-environment.sh:2"),
            std::string::npos)
      << computed.err;
  auto forced = capsa({"exec", "--debug", busybox_sif(), "true"}, {"CAPSA_ACTION_SHELL=1"});
  EXPECT_NE(forced.err.find(std::string(kThroughShell) + ": CAPSA_ACTION_SHELL is set"), std::string::npos) << forced.err;
  // A path that is not there: the script's words and status.
  auto no_file = capsa({"exec", busybox_sif(), "/no/such/program"});
  EXPECT_EQ(no_file.exit_code, 127);
  EXPECT_NE(no_file.err.find("\"/no/such/program\": no such file or directory"), std::string::npos) << no_file.err;
  auto missing = capsa({"exec", busybox_sif(), "no-such-command"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("\"no-such-command\": executable file not found in $PATH"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace capsa::runtime
