// The environment a container's process starts with, composed as Apptainer composes it
// (docs/environment.md
// names the test of each rule). Root and test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;
using testing::ImageFile;
using testing::lines_of;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// `env` output as a map (values in these tests hold no newline).
std::map<std::string, std::string> env_of(const std::string& out) {
  std::map<std::string, std::string> env;
  for (const auto& line : lines_of(out)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

// An image with environment scripts that record what they saw and in which order.
class Environment : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    image_ = testing::make_image(
        *dir_, "env",
        {{"/.singularity.d/env/10-docker2singularity.sh",
          "#!/bin/sh\nexport PATH=\"/docker/bin:/usr/bin\"\nexport FROM_DOCKER=\"${FROM_DOCKER:-\"docker-default\"}\"\n", 0755},
         {"/.singularity.d/env/50-order.sh",
          "#!/bin/sh\nORDER=\"${ORDER:-}50\"\nexport ORDER\nexport SEEN_HOST=\"[${CAPSA_HOST_VAR:-}]\"\n", 0755},
         {"/.singularity.d/env/90-environment.sh",
          "#!/bin/sh\nORDER=\"$ORDER 90\"\nexport FROM_IMAGE=image\nexport EMPTIED=\"\"\n", 0755},
         {"/.singularity.d/env/99-base.sh",
          "#!/bin/sh\nif [ -z \"$LD_LIBRARY_PATH\" ]; then LD_LIBRARY_PATH=/.singularity.d/libs; "
          "else LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH:/.singularity.d/libs\"; fi\nPS1=\"Image> \"\n"
          "export LD_LIBRARY_PATH PS1\n",
          0755},
         {"/.singularity.d/env/99-zz-last.sh",
          "#!/bin/sh\nORDER=\"$ORDER 99z\"\nexport SEEN_INJECTED=\"[${INJECTED:-}]\"\n", 0755}});
    bare_image_ = testing::make_image(*dir_, "bare", {});
  }
  static void TearDownTestSuite() { delete dir_; }

  static test::TempDir* dir_;
  static std::string image_;       // the scripts above
  static std::string bare_image_;  // no environment scripts at all
};
test::TempDir* Environment::dir_ = nullptr;
std::string Environment::image_;
std::string Environment::bare_image_;

TEST_F(Environment, HostVariablesPassExceptTheWithheldOnes) {
  auto result = capsa({"exec", busybox_sif(), "env"},
                      {"CAPSA_HOST_VAR=host value", "LD_LIBRARY_PATH=/host/lib", "APPTAINER_FOO=x", "SINGULARITY_FOO=y",
                       "SINGULARITYENV_BAR=injected", "PATH=/host/bin:/usr/bin:/bin", "HOME=/tmp"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto env = env_of(result.out);
  EXPECT_EQ(env["CAPSA_HOST_VAR"], "host value");
  EXPECT_EQ(env.count("APPTAINER_FOO"), 0u);
  EXPECT_EQ(env.count("SINGULARITY_FOO"), 0u);
  EXPECT_EQ(env.count("SINGULARITYENV_BAR"), 0u);
  EXPECT_EQ(env["BAR"], "injected");
  EXPECT_EQ(env["LD_LIBRARY_PATH"], "/.singularity.d/libs") << "the host's LD_LIBRARY_PATH is never forwarded";
  EXPECT_EQ(env["PATH"], kDefaultPath) << "the host's PATH is not forwarded";
  EXPECT_EQ(env["HOME"], "/tmp");
}

TEST_F(Environment, ImageScriptsRunInOrderWithoutTheHostsValues) {
  auto result = capsa({"exec", image_, "sh", "-c",
                       "echo \"$ORDER|$SEEN_HOST|$CAPSA_HOST_VAR|$FROM_DOCKER|${EMPTIED-unset}|$FROM_IMAGE|$PATH\""},
                      {"CAPSA_HOST_VAR=host", "FROM_DOCKER=host", "EMPTIED=host", "FROM_IMAGE=host"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // The scripts see none of the host's variables; the host's come back afterwards only
  // where the image set nothing (and where it set "", the variable is unset). After
  // 10-docker*.sh the default PATH entries it lacks are appended.
  EXPECT_EQ(result.out,
            "50 90 99z|[]|host|docker-default|unset|image|/docker/bin:/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/bin\n");
}

TEST_F(Environment, InjectionPrecedence) {
  test::TempDir files;
  std::string first = files.write("first.env", "# comment\nFROM_FILE=first\nBOTH_FILES=first\nexport QUOTED=\"a b\"\n");
  std::string second = files.write("second.env", "BOTH_FILES=second\nALL=file\n");
  auto result = capsa({"exec", "--env-file", first, "--env-file", second, "--env", "ALL=flag", image_, "sh", "-c",
                       "echo \"$FROM_LEGACY|$APP_WINS|$FROM_FILE|$BOTH_FILES|$QUOTED|$ALL|$FROM_IMAGE|$FROM_DOCKER|$SEEN_INJECTED\""},
                      {"SINGULARITYENV_FROM_LEGACY=legacy", "SINGULARITYENV_APP_WINS=legacy", "APPTAINERENV_APP_WINS=apptainer",
                       "APPTAINERENV_ALL=apptainer", "APPTAINERENV_FROM_IMAGE=injected", "APPTAINERENV_FROM_DOCKER=injected",
                       "APPTAINERENV_INJECTED=yes"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // SINGULARITYENV_ < APPTAINERENV_ < --env-file (later files win) < --env; all of them
  // over the image's values; injected right after 99-base.sh, so later scripts see them.
  EXPECT_EQ(result.out, "legacy|apptainer|first|second|a b|flag|injected|injected|[yes]\n");
}

TEST_F(Environment, InjectedValuesAreEvaluatedOnceInside) {
  auto result = capsa({"exec", "--env", "EVAL=$HOME/sub", busybox_sif(), "sh", "-c", "echo \"$EVAL|$QUOTE\""},
                      {"HOME=/tmp", "APPTAINERENV_QUOTE=say \"hi\""});
  EXPECT_EQ(result.out, "/tmp/sub|say \"hi\"\n") << result.err;
}

TEST_F(Environment, EnvFlagTakesCommaSeparatedAssignments) {
  // pflag's rules, as Apptainer reads --env: with two '=' or more a CSV record (a quoted
  // field keeps its commas, "" in it is one quote); with one '=' the whole text, double
  // quotes trimmed from its ends.
  auto result = capsa({"exec", "--env", "A=1,B=2", "--env", "\"C=x,y\",\"D=say \"\"hi\"\"\"", "--env", "E=1,2", "--env",
                       "\"F=a b\"", busybox_sif(), "sh", "-c", "echo \"$A|$B|$C|$D|$E|$F\""});
  EXPECT_EQ(result.out, "1|2|x,y|say \"hi\"|1,2|a b\n") << result.err;
  auto bare_quote = capsa({"exec", "--env", "A=1,E=\"x,y\"", busybox_sif(), "true"});
  EXPECT_EQ(bare_quote.exit_code, 1);
  EXPECT_EQ(bare_quote.err, "capsa: error: --env A=1,E=\"x,y\": column 7: a double quote in an unquoted field (quote the "
                            "whole field, and double each quote inside it)\n");
}

TEST_F(Environment, HomeAndShellCannotBeInjected) {
  auto result = capsa({"exec", busybox_sif(), "sh", "-c", "echo \"$HOME\""}, {"HOME=/tmp", "APPTAINERENV_HOME=/elsewhere"});
  EXPECT_EQ(result.out, "/tmp\n");
  EXPECT_NE(result.err.find("HOME"), std::string::npos) << "a warning names it: " << result.err;
}

TEST_F(Environment, PathPrependAppendAndReplace) {
  auto both = capsa({"exec", busybox_sif(), "env"}, {"APPTAINERENV_PREPEND_PATH=/pre", "SINGULARITYENV_APPEND_PATH=/app"});
  auto env = env_of(both.out);
  EXPECT_EQ(env["PATH"], std::string("/pre:") + kDefaultPath + ":/app") << both.err;
  for (const char* hidden : {"PREPEND_PATH", "APPEND_PATH", "SING_USER_DEFINED_PREPEND_PATH", "SING_USER_DEFINED_APPEND_PATH"})
    EXPECT_EQ(env.count(hidden), 0u) << hidden;
  auto replaced = capsa({"exec", busybox_sif(), "sh", "-c", "echo $PATH"}, {"APPTAINERENV_PATH=/only:/bin"});
  EXPECT_EQ(replaced.out, "/only:/bin\n") << replaced.err;
  auto flag = capsa({"exec", "--env", "PATH=/flag:/bin", busybox_sif(), "sh", "-c", "echo $PATH"});
  EXPECT_EQ(flag.out, "/flag:/bin\n") << flag.err;
  // An image that sets no PATH gets Apptainer's default.
  auto bare = capsa({"exec", bare_image_, "sh", "-c", "echo $PATH"}, {"PATH=/host/only:/usr/bin:/bin"});
  EXPECT_EQ(bare.out, std::string(kDefaultPath) + "\n") << bare.err;
}

TEST_F(Environment, LdLibraryPathEndsWithTheRuntimeLibraries) {
  auto plain = capsa({"exec", busybox_sif(), "sh", "-c", "echo $LD_LIBRARY_PATH"}, {"LD_LIBRARY_PATH=/host/lib"});
  EXPECT_EQ(plain.out, "/.singularity.d/libs\n") << plain.err;
  auto injected = capsa({"exec", busybox_sif(), "sh", "-c", "echo $LD_LIBRARY_PATH"}, {"APPTAINERENV_LD_LIBRARY_PATH=/mine"});
  EXPECT_EQ(injected.out, "/mine:/.singularity.d/libs\n") << injected.err;
  auto prepended = capsa({"exec", "--env", "PREPEND_LD_LIBRARY_PATH=/pre", "--env", "APPEND_LD_LIBRARY_PATH=/post",
                          busybox_sif(), "sh", "-c", "echo $LD_LIBRARY_PATH"});
  EXPECT_EQ(prepended.out, "/pre:/.singularity.d/libs:/post\n") << prepended.err;
}

TEST_F(Environment, ContainerNameAndPathAreSet) {
  auto result = test::run_process({"sh", "-c", "cd \"$(dirname \"$1\")\" && exec \"$2\" exec ./busybox_amd64.sif env", "sh",
                                   busybox_sif(), test::capsa_binary()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto env = env_of(result.out);
  std::string absolute = test::run_process({"realpath", busybox_sif()}).out;
  absolute.pop_back();
  for (const char* prefix : {"APPTAINER_", "SINGULARITY_"}) {
    std::string p = prefix;
    EXPECT_EQ(env[p + "CONTAINER"], absolute);
    EXPECT_EQ(env[p + "NAME"], "busybox_amd64.sif");
    EXPECT_EQ(env[p + "COMMAND"], "exec");
    EXPECT_EQ(env[p + "ENVIRONMENT"], "/.singularity.d/env/91-environment.sh");
  }
  // Absolute but not resolved (Apptainer's filepath.Abs): a link keeps its own name.
  test::TempDir dir;
  std::filesystem::create_symlink(busybox_sif(), dir / "link.sif");
  auto linked = capsa({"exec", "./link.sif", "sh", "-c", "echo $APPTAINER_CONTAINER $SINGULARITY_NAME"}, {}, "", dir.path());
  EXPECT_EQ(linked.out, (dir / "link.sif") + " link.sif\n") << linked.err;
  auto run = capsa({"run", busybox_sif(), "sh", "-c", "echo $APPTAINER_COMMAND"});
  EXPECT_EQ(run.out, "run\n") << run.err;
}

TEST_F(Environment, Ps1ForShell) {
  // The image's 99-base.sh sets it (Singularity 3.8 writes "Singularity> "); the host's
  // PS1 yields to it.
  auto busybox = capsa({"shell", busybox_sif()}, {"PS1=host> "}, "echo \"[$PS1]\"\n");
  EXPECT_EQ(busybox.out, "[Singularity> ]\n") << busybox.err;
  auto custom = capsa({"shell", image_}, {"PS1=host> ", "-u PROMPT_COMMAND"}, "echo \"[$PS1]\"; echo \"$PROMPT_COMMAND\"\n");
  EXPECT_EQ(custom.out, "[Image> ]\nPS1=\"Image> \"; unset PROMPT_COMMAND\n") << custom.err;
  // No script sets one: the host's comes back, else Apptainer's default.
  auto bare = capsa({"shell", bare_image_}, {"-u PS1"}, "echo \"[$PS1]\"\n");
  EXPECT_EQ(bare.out, "[Apptainer> ]\n") << bare.err;
  auto bare_host = capsa({"shell", bare_image_}, {"PS1=host> "}, "echo \"[$PS1]\"\n");
  EXPECT_EQ(bare_host.out, "[host> ]\n") << bare_host.err;
}

TEST_F(Environment, UmaskIsTheCallers) {
  auto result = test::run_process({"sh", "-c", "umask 027 && exec \"$0\" exec \"$1\" sh -c umask", test::capsa_binary(), busybox_sif()});
  EXPECT_EQ(result.out, "0027\n") << result.err;
}

TEST_F(Environment, CleanenvKeepsOnlyWhatApptainerKeeps) {
  test::TempDir home;
  auto result = capsa({"exec", "--cleanenv", busybox_sif(), "env"},
                      {"-i", "HOME=" + home.path(), "PATH=/usr/bin:/bin", "TERM=xterm-test", "http_proxy=http://proxy:3128",
                       "NO_PROXY=localhost", "LANG=en_US.UTF-8", "CAPSA_SECRET=1", "USER=someone", "APPTAINERENV_KEPT=yes"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto env = env_of(result.out);
  EXPECT_EQ(env["LANG"], "C");
  EXPECT_EQ(env["TERM"], "xterm-test");
  EXPECT_EQ(env["http_proxy"], "http://proxy:3128");
  EXPECT_EQ(env["NO_PROXY"], "localhost");
  EXPECT_EQ(env["KEPT"], "yes") << "injection still works with --cleanenv";
  EXPECT_EQ(env["HOME"], home.path());
  const std::set<std::string> allowed = {
      "HOME", "LANG", "LD_LIBRARY_PATH", "PATH", "PROMPT_COMMAND", "PS1", "PWD", "TERM", "http_proxy", "NO_PROXY", "KEPT",
      "APPTAINER_COMMAND", "APPTAINER_CONTAINER", "APPTAINER_ENVIRONMENT", "APPTAINER_NAME", "SINGULARITY_COMMAND",
      "SINGULARITY_CONTAINER", "SINGULARITY_ENVIRONMENT", "SINGULARITY_NAME",
      "SHLVL"};  // busybox sh exports it itself
  for (const auto& [name, value] : env) EXPECT_TRUE(allowed.count(name)) << name << "=" << value;
}

}  // namespace
}  // namespace capsa::runtime
