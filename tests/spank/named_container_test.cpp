// A named container's private files (spank/named_container.hpp) and running a command as
// the job's user (spank/run_as_user.hpp), on real directories.
#include "spank/named_container.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "spank/run_as_user.hpp"
#include "support/temp_dir.hpp"
#include "util/own_directory.hpp"

namespace capsa::spank {
namespace {

using test::TempDir;

TEST(NamedContainer, TheFirstStepRecordsTheImageALaterOneReusesIt) {
  TempDir state;
  const auto paths = named_container_paths(user_state_dir(state.path(), ::getuid(), true), "n1", "42", "dev");
  EXPECT_EQ(paths.overlay_dir, state / ("capsa-spank-" + std::to_string(::getuid()) + "/n1/42/dev"));
  EXPECT_EQ(named_job_dir(paths.user_dir, "n1", "42"), paths.job_dir);
  EXPECT_EQ(prepare_named_container(paths, ::getuid(), "docker://x/y:1"), "docker://x/y:1");
  EXPECT_TRUE(is_own_directory(paths.overlay_dir + "/upper", ::getuid()));
  struct stat st {};
  ASSERT_EQ(::stat(paths.user_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(prepare_named_container(paths, ::getuid(), ""), "docker://x/y:1");
  EXPECT_EQ(prepare_named_container(paths, ::getuid(), "docker://x/y:1"), "docker://x/y:1");
  try {
    prepare_named_container(paths, ::getuid(), "docker://other");
    FAIL() << "another image was taken for the same name";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("was made from docker://x/y:1"), std::string::npos) << e.what();
  }
}

TEST(NamedContainer, ALaterStepWithoutImageNeedsAnEarlierOne) {
  TempDir state;
  const auto paths = named_container_paths(user_state_dir(state.path(), ::getuid(), true), "n1", "42", "dev");
  try {
    prepare_named_container(paths, ::getuid(), "");
    FAIL() << "no image, nothing recorded, and yet accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("give --container-image"), std::string::npos) << e.what();
  }
}

TEST(NamedContainer, ADirectoryPlantedInTheSharedStateDirIsNotUsed) {
  TempDir state;
  const auto paths = named_container_paths(state / ("capsa-spank-" + std::to_string(::getuid())), "n1", "42", "dev");
  std::filesystem::create_directories(state / "elsewhere");
  ASSERT_EQ(::symlink((state / "elsewhere").c_str(), paths.user_dir.c_str()), 0);
  EXPECT_THROW(prepare_named_container(paths, ::getuid(), "/i.sif"), std::runtime_error);
  EXPECT_FALSE(is_own_directory(paths.user_dir, ::getuid()));
  EXPECT_FALSE(is_own_directory(state.path(), ::getuid() + 1));
}

// Issue 45: another user who made STATEDIR/capsa-spank-UID first (the default STATEDIR is
// /tmp) blocked every named container of the uid. The user's own capsa-spank-UID.XXXXXX
// serves instead, the same one for every later step, and the epilog (make = false) finds it.
TEST(NamedContainer, AUserDirectoryMadeFirstByAnotherUserBlocksNothing) {
  TempDir state;
  const std::string usual = state / ("capsa-spank-" + std::to_string(::getuid()));
  if (::geteuid() == 0) {
    ASSERT_EQ(::mkdir(usual.c_str(), 0700), 0);
    ASSERT_EQ(::chown(usual.c_str(), 65534, 65534), 0);
  } else {
    ASSERT_EQ(::symlink("/", usual.c_str()), 0);  // what an unprivileged test can plant
  }
  EXPECT_EQ(user_state_dir(state.path(), ::getuid(), false), "") << "nothing of the user's yet";
  const std::string own = user_state_dir(state.path(), ::getuid(), true);
  EXPECT_TRUE(own.starts_with(usual + ".")) << own;
  EXPECT_TRUE(is_own_directory(own, ::getuid()));
  EXPECT_EQ(user_state_dir(state.path(), ::getuid(), true), own) << "a later step takes the same";
  EXPECT_EQ(user_state_dir(state.path(), ::getuid(), false), own) << "the epilog finds it";
  const auto paths = named_container_paths(own, "n1", "42", "dev");
  EXPECT_EQ(prepare_named_container(paths, ::getuid(), "docker://x/y:1"), "docker://x/y:1");
}

TEST(RunAsUser, CapturesOutputAndExitCodeAsTheSameUser) {
  auto result = run_as_user({{"/bin/sh", "-c", "id -u; echo \"$X\" >&2; exit 3"}, {"X=fine"}, ::getuid(), ::getgid()});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.output.find(std::to_string(::getuid()) + "\n"), std::string::npos) << result.output;
  EXPECT_EQ(last_line(result.output, "none"), "fine");
}

// Issue 45: the output came into slurmstepd whole, however much the user's command
// printed. Only its last kOutputLimit bytes do, after a line saying so; the last line,
// which the plugin shows, is kept.
TEST(RunAsUser, OutputIsBoundedToItsTail) {
  auto result = run_as_user({{"/bin/sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo the last line"},
                             {},
                             ::getuid(),
                             ::getgid()});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_LE(result.output.size(), kOutputLimit + 100);
  EXPECT_EQ(result.output.rfind("[capsa's output cut: its first ", 0), 0u) << result.output.substr(0, 100);
  EXPECT_EQ(last_line(result.output, "none"), "the last line");
}

TEST(RunAsUser, RootBecomesTheJobsUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  auto result = run_as_user({{"/usr/bin/id", "-u"}, {}, 65534, 65534});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(last_line(result.output, ""), "65534");
}

TEST(RunAsUser, AMissingProgramSaysSo) {
  auto result = run_as_user({{"/nonexistent/capsa"}, {}, ::getuid(), ::getgid()});
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_NE(result.output.find("capsa="), std::string::npos) << result.output;
}

TEST(RunAsUser, HelpersOfTheEnvironment) {
  std::vector<std::string> env = {"A=1", "AB=2"};
  set_variable(env, "A", "3");
  set_variable(env, "C", "4");
  EXPECT_EQ(env, (std::vector<std::string>{"A=3", "AB=2", "C=4"}));
  EXPECT_EQ(last_line("one\ntwo\n\n", "x"), "two");
  EXPECT_EQ(last_line("\n", "x"), "x");
}

}  // namespace
}  // namespace capsa::spank
