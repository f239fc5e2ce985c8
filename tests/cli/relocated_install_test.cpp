// A user without root installs capsa into a prefix of their own and moves it: the moved
// capsa still finds capsa-full and its configuration (src/util/install_layout.hpp), pulls
// and runs. Root and test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::cli {
namespace {

namespace fs = std::filesystem;
using test::run_process;

std::string build_dir() {
  const char* dir = std::getenv("CAPSA_BUILD_DIR");
  return dir ? dir : "";
}

TEST(RelocatedInstall, AMovedPrefixPullsAndRuns) {
  ASSERT_FALSE(build_dir().empty()) << "CAPSA_BUILD_DIR is not set; run through ctest";
  test::TempDir work;
  auto installed = run_process({"cmake", "--install", build_dir(), "--prefix", work / "first"}, "", 300);
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;

  // The prefix moved as a whole: nothing may still point at "first".
  fs::rename(work / "first", work / "moved");
  const std::string capsa = work / "moved/bin/capsa";
  for (const char* piece :
       {"bin/capsa", "bin/singularity", "libexec/capsa/capsa-full", "etc/capsa/nvliblist.conf", "etc/capsa/capsa.conf"})
    EXPECT_TRUE(fs::exists(work / "moved/" + piece)) << piece;

  // `version` is capsa-full's: the runner must find the moved prefix's copy, not one the
  // configured path may hold. A wrapper in its place records that it ran.
  const std::string full = work / "moved/libexec/capsa/capsa-full";
  fs::rename(full, full + ".real");
  work.write("moved/libexec/capsa/capsa-full",
             "#!/bin/sh\ntouch '" + (work / "full-ran") + "'\nexec '" + full + ".real' \"$@\"\n");
  fs::permissions(full, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  auto version = run_process({capsa, "version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("capsa ", 0), 0u) << version.out;
  EXPECT_TRUE(fs::exists(work / "full-ran")) << "the runner did not hand `version` to the moved capsa-full";

  // `buildcfg` names the folders of the moved prefix, as the lookups above use them.
  auto buildcfg = run_process({capsa, "buildcfg"});
  EXPECT_EQ(buildcfg.exit_code, 0) << buildcfg.err;
  for (const std::string& line :
       {"PREFIX=" + (work / "moved"), "BINDIR=" + (work / "moved/bin"), "LIBEXECDIR=" + (work / "moved/libexec"),
        "SYSCONFDIR=" + (work / "moved/etc"), "APPTAINER_CONFDIR=" + (work / "moved/etc/capsa"),
        "APPTAINER_CONF_FILE=" + (work / "moved/etc/capsa/capsa.conf")})
    EXPECT_NE(buildcfg.out.find("\n" + line + "\n"), std::string::npos) << line << " not in:\n" << buildcfg.out;
  EXPECT_EQ(run_process({capsa, "buildcfg", "PREFIX"}).out, (work / "moved") + "\n");

  const auto& registry = test::test_registry();
  const std::string sif = work / "busybox.sif";
  auto pulled = run_process({"env", "CAPSA_CACHEDIR=" + (work / "cache"), capsa, "pull", "--nohttps", sif,
                             "docker://" + registry.plain + "/public/busybox:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  auto ran = run_process({capsa, "exec", sif, "echo", "from the moved prefix"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "from the moved prefix\n");

  // --nv reads the moved prefix's nvliblist.conf (not the configured path, which may hold
  // another copy): a program listed only there is brought into the container.
  {
    std::ofstream list(work / "moved/etc/capsa/nvliblist.conf", std::ios::app);
    list << "capsa-relocation-marker\n";
  }
  fs::create_directories(work / "bin");
  const std::string marker = work.write("bin/capsa-relocation-marker", "#!/bin/sh\n");
  fs::permissions(marker, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  const char* host_path = std::getenv("PATH");
  auto nv = run_process({"env", "PATH=" + (work / "bin") + ":" + (host_path ? host_path : "/usr/bin:/bin"), capsa,
                         "exec", "--nv", sif, "ls", "/usr/bin/capsa-relocation-marker"});
  EXPECT_EQ(nv.exit_code, 0) << nv.out << nv.err;

  // The moved prefix's capsa.conf is the administrator's file: `config global` changes it,
  // runs see the change, and installing again keeps the edited file.
  fs::create_directories(work / "site");
  work.write("site/marker", "site file\n");
  const std::string conf = work / "moved/etc/capsa/capsa.conf";
  auto set = run_process({capsa, "config", "global", "--set", "bind path", (work / "site") + ":/site"});
  EXPECT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(test::read_file(conf).find("bind path = " + (work / "site") + ":/site\n"), std::string::npos);
  EXPECT_EQ(run_process({capsa, "exec", sif, "cat", "/site/marker"}).out, "site file\n");
  auto again = run_process({"cmake", "--install", build_dir(), "--prefix", work / "moved"}, "", 300);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(test::read_file(conf).find("bind path = " + (work / "site") + ":/site\n"), std::string::npos)
      << "a reinstall replaced the site's capsa.conf";
}

TEST(RelocatedInstall, CompletionAndManPagesAreInstalledAndWork) {
  ASSERT_FALSE(build_dir().empty()) << "CAPSA_BUILD_DIR is not set; run through ctest";
  test::TempDir work;
  auto installed = run_process({"cmake", "--install", build_dir(), "--prefix", work / "prefix"}, "", 300);
  ASSERT_EQ(installed.exit_code, 0) << installed.out << installed.err;

  // bash-completion finds a command's completion by the command's name.
  const std::string completions = work / "prefix/share/bash-completion/completions";
  for (const char* name : {"capsa", "singularity", "apptainer"})
    EXPECT_TRUE(fs::exists(completions + "/" + name)) << name;
  auto complete = [&](const std::string& words, int current) {
    return run_process({"bash", "-c",
                        "source '" + completions + "/singularity' && COMP_WORDS=(" + words +
                            ") && COMP_CWORD=" + std::to_string(current) + " && _capsa && echo \"${COMPREPLY[*]}\""});
  };
  EXPECT_EQ(complete("singularity ex", 1).out, "exec\n");
  EXPECT_EQ(complete("singularity sif ad", 2).out, "add\n");
  EXPECT_EQ(complete("singularity -s exec -B /data --hostn", 5).out, "--hostname\n")
      << "flags and their values skipped";
  EXPECT_EQ(complete("apptainer pull --na", 2).out, "--name\n");

  // zsh: the same tables behind compadd (a stub here that prints what it is given; zsh
  // itself filters by the prefix), for the words before the cursor.
  if (test::have_program("zsh")) {
    auto zsh_offers = [&](const std::string& words, int current, const std::string& prefix) {
      return run_process({"zsh", "-c",
                          "compadd() { shift; print -r -- \"$*\"; }; _files() { print files; }; words=(" + words +
                              "); CURRENT=" + std::to_string(current) + "; PREFIX=" + prefix + "; source '" +
                              (work / "prefix/share/zsh/site-functions/_capsa") + "'"});
    };
    auto top = zsh_offers("singularity ex", 2, "ex");
    EXPECT_EQ(top.exit_code, 0) << top.err;
    EXPECT_NE(top.out.find("exec"), std::string::npos) << top.out << top.err;
    auto sif = zsh_offers("singularity sif a", 3, "a");
    EXPECT_EQ(sif.out, "new add del dump info setprim header list\n") << "the sif subcommands only: " << sif.err;
    auto flags = zsh_offers("singularity exec --hostn", 3, "--hostn");
    EXPECT_NE(flags.out.find("--hostname"), std::string::npos) << flags.out;
    EXPECT_EQ(flags.out.find(" sif "), std::string::npos) << "exec's flags, not the commands: " << flags.out;
  } else {
    ADD_FAILURE() << "zsh is missing: scripts/install-deps.sh test installs it";
  }

  // Every page renders without a warning from groff; capsa(1) and capsa-exec(1) are among them.
  const std::string man1 = work / "prefix/share/man/man1";
  int pages = 0;
  for (const auto& entry : fs::directory_iterator(man1)) {
    ++pages;
    auto rendered = run_process({"env", "MANWIDTH=80", "man", "--warnings", "-P", "cat", "-l", entry.path().string()});
    EXPECT_EQ(rendered.exit_code, 0) << entry.path() << ": " << rendered.err;
    EXPECT_EQ(rendered.err, "") << entry.path();
    EXPECT_NE(rendered.out.find("NAME"), std::string::npos) << entry.path();
  }
  EXPECT_TRUE(fs::exists(man1 + "/capsa.1"));
  EXPECT_TRUE(fs::exists(man1 + "/capsa-exec.1"));
  EXPECT_TRUE(fs::exists(man1 + "/capsa-sif-add.1"));
  EXPECT_GT(pages, 20);
  auto exec_page = run_process({"env", "MANWIDTH=80", "man", "-P", "cat", "-l", man1 + "/capsa-exec.1"});
  EXPECT_NE(exec_page.out.find("--hostname"), std::string::npos) << "the page lists what --help lists";
}

}  // namespace
}  // namespace capsa::cli
