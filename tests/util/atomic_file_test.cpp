#include "util/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa {
namespace {

using test::TempDir;

std::size_t entries_in(const std::string& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, AppearsUnderItsNameOnlyAfterCommit) {
  TempDir dir;
  std::string target = dir / "out.sif";
  {
    AtomicFile file(target, 0644);
    ASSERT_EQ(::write(file.fd(), "data", 4), 4);
    EXPECT_FALSE(std::filesystem::exists(target));
    file.commit();
  }
  EXPECT_EQ(test::read_file(target), "data");
  EXPECT_EQ(entries_in(dir.path()), 1u);
}

TEST(AtomicFile, AbandonedFileLeavesNothingBehind) {
  TempDir dir;
  {
    AtomicFile file(dir / "out.sif", 0644);
    ASSERT_EQ(::write(file.fd(), "partial", 7), 7);
  }
  EXPECT_EQ(entries_in(dir.path()), 0u);
}

// What SIGKILL does: the process ends with the file open and no destructor runs. An
// unnamed temporary leaves nothing (materialize() writes pull outputs this way).
TEST(AtomicFile, ProcessKilledWhileWritingAnUnnamedFileLeavesNothingBehind) {
  TempDir dir;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto* file = new AtomicFile(dir / "out.sif", 0644, AtomicFile::Temporary::unnamed_if_possible);
    if (::write(file->fd(), "partial", 7) != 7) ::_exit(2);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(entries_in(dir.path()), 0u) << "tmpfs and ext4 support O_TMPFILE: no named temporary";
}

TEST(AtomicFile, CommitWithoutReplaceRefusesAnExistingFile) {
  TempDir dir;
  std::string target = dir.write("out.sif", "old");
  AtomicFile file(target, 0644);
  EXPECT_THROW(file.commit(false), SystemError);
  EXPECT_EQ(test::read_file(target), "old");
}

TEST(AtomicFile, HonoursTheRequestedModeMinusUmask) {
  TempDir dir;
  std::string target = dir / "image.sif";
  mode_t old_mask = ::umask(022);
  {
    AtomicFile file(target, 0755);
    file.commit();
  }
  ::umask(old_mask);
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

// The unnamed kind has no name at all until commit (so a SIGKILL cannot leave one), and
// otherwise behaves as the named kind: replace or refuse, mode minus umask.
TEST(AtomicFile, UnnamedTemporaryHasNoNameUntilCommit) {
  TempDir dir;
  std::string target = dir / "out.sif";
  mode_t old_mask = ::umask(022);
  {
    AtomicFile file(target, 0755, AtomicFile::Temporary::unnamed_if_possible);
    ASSERT_EQ(::write(file.fd(), "data", 4), 4);
    EXPECT_EQ(entries_in(dir.path()), 0u) << "no name in the directory while it is written";
    EXPECT_EQ(file.temp_path(), "");
    file.commit(/*replace=*/false);
  }
  ::umask(old_mask);
  EXPECT_EQ(test::read_file(target), "data");
  EXPECT_EQ(entries_in(dir.path()), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);

  AtomicFile refused(target, 0644, AtomicFile::Temporary::unnamed_if_possible);
  EXPECT_THROW(refused.commit(false), SystemError);
  AtomicFile replacing(target, 0644, AtomicFile::Temporary::unnamed_if_possible);
  ASSERT_EQ(::write(replacing.fd(), "new", 3), 3);
  replacing.commit(/*replace=*/true);
  EXPECT_EQ(test::read_file(target), "new");
  EXPECT_EQ(entries_in(dir.path()), 1u) << "no temporary name left";
}

}  // namespace
}  // namespace capsa
