// A site installs capsa and offers it as an environment module: `module load capsa` (or
// `singularity`, `apptainer`, the names job scripts load) puts the commands, their manual
// pages and their shell completion in reach, and `module unload` takes them away again.
// Run with Debian's Lmod, which reads the Lua files and, where no Lua file is beside
// them, the Tcl ones (cmake/CapsaModulefiles.cmake). Root and test user.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "capsa/version.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::cli {
namespace {

namespace fs = std::filesystem;
using test::run_process;

const char* const lmod_init = "/usr/share/lmod/lmod/init/bash";

std::string installed_prefix(test::TempDir& work) {
  const char* build_dir = std::getenv("CAPSA_BUILD_DIR");
  if (build_dir == nullptr) return "";
  auto installed = run_process({"cmake", "--install", build_dir, "--prefix", work / "first"}, "", 300);
  if (installed.exit_code != 0) return "";
  // Modulefiles find the prefix from their own place: move it, as relocated_install_test does.
  fs::rename(work / "first", work / "site");
  return work / "site";
}

// Loads MODULE from the prefix's modulefiles in a clean login-like bash and runs SCRIPT.
test::ProcessResult with_module(const std::string& modulepath, const std::string& module, const std::string& script) {
  return run_process({"env", "-u", "MANPATH", "-u", "XDG_DATA_DIRS", "-u", "FPATH", "bash", "-c",
                      std::string("source ") + lmod_init + " && module use '" + modulepath + "' && module load " +
                          module + " && " + script});
}

void expect_module_works(const std::string& prefix, const std::string& modulepath, const std::string& module) {
  SCOPED_TRACE(modulepath + " " + module);
  auto version = with_module(modulepath, module, "singularity --version && command -v singularity");
  ASSERT_EQ(version.exit_code, 0) << version.out << version.err;
  EXPECT_EQ(version.out,
            std::string("apptainer version ") + build_info::apptainer_release + "\n" + prefix + "/bin/singularity\n");

  // The prefix's pages are found, and an empty entry keeps man's own search path.
  auto manual = with_module(modulepath, module, "man -w capsa-exec && echo \"[$MANPATH]\"");
  ASSERT_EQ(manual.exit_code, 0) << manual.err;
  EXPECT_EQ(manual.out, prefix + "/share/man/man1/capsa-exec.1\n[" + prefix + "/share/man::]\n");

  // bash-completion's loader finds the completion through XDG_DATA_DIRS.
  auto completion = with_module(
      modulepath, module,
      "source /usr/share/bash-completion/bash_completion && __load_completion singularity && complete -p singularity");
  EXPECT_EQ(completion.exit_code, 0) << completion.err;
  EXPECT_EQ(completion.out, "complete -o filenames -F _capsa singularity\n");

  // A site-wide capsa (setup.sh installs one in /usr/local) may still answer to the name after
  // the unload; what must be gone is this prefix.
  auto unloaded = with_module(
      modulepath, module, "module unload " + module + " && echo \"[$PATH]\" && { command -v singularity || true; }");
  EXPECT_EQ(unloaded.exit_code, 0) << unloaded.out << unloaded.err;
  EXPECT_NE(unloaded.out.find("[/"), std::string::npos) << "PATH was printed: " << unloaded.out;
  EXPECT_EQ(unloaded.out.find(prefix), std::string::npos) << "unload leaves nothing of the prefix: " << unloaded.out;
}

TEST(Modulefiles, LmodLoadsTheLuaModuleUnderEveryName) {
  if (!fs::exists(lmod_init)) GTEST_FAIL() << "Lmod is missing: scripts/install-deps.sh test installs it";
  test::TempDir work;
  const std::string prefix = installed_prefix(work);
  ASSERT_FALSE(prefix.empty()) << "cmake --install of CAPSA_BUILD_DIR failed (run through ctest)";
  for (const char* name : {"capsa", "singularity", "apptainer"})
    expect_module_works(prefix, prefix + "/share/modulefiles", name);
}

TEST(Modulefiles, TheTclModulefileWorksOnItsOwn) {
  if (!fs::exists(lmod_init)) GTEST_FAIL() << "Lmod is missing: scripts/install-deps.sh test installs it";
  test::TempDir work;
  const std::string prefix = installed_prefix(work);
  ASSERT_FALSE(prefix.empty()) << "cmake --install of CAPSA_BUILD_DIR failed (run through ctest)";
  // Without the Lua file beside it, Lmod reads the Tcl one (as Environment Modules would).
  for (const auto& entry : fs::recursive_directory_iterator(prefix + "/share/modulefiles"))
    if (entry.path().extension() == ".lua") fs::remove(entry.path());
  const std::string tcl_file = prefix + "/share/modulefiles/capsa/" + build_info::version;
  auto shown = run_process({"head", "-n1", tcl_file});
  EXPECT_EQ(shown.out, "#%Module1.0\n");
  expect_module_works(prefix, prefix + "/share/modulefiles", "capsa");
}

}  // namespace
}  // namespace capsa::cli
