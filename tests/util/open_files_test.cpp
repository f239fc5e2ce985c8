// has_files_open_under (util/open_files.hpp): a process's descriptors below a directory,
// read from /proc/PID/fd.
#include "util/open_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace capsa {
namespace {

class OpenFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/capsa-open-files-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir = std::filesystem::canonical(tmpl).string();
    std::filesystem::create_directories(dir + "/mnt/sub");
    std::filesystem::create_directories(dir + "/mnt-beside");
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  int open_file(const std::string& path) { return ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600); }

  std::string dir;
};

TEST_F(OpenFiles, AFileBelowTheDirectoryCountsUntilItIsClosed) {
  const std::string mount = dir + "/mnt";
  EXPECT_FALSE(has_files_open_under(::getpid(), mount));
  const int fd = open_file(mount + "/sub/.hack");
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(has_files_open_under(::getpid(), mount));
  EXPECT_TRUE(has_files_open_under(::getpid(), mount + "/"));
  ::close(fd);
  EXPECT_FALSE(has_files_open_under(::getpid(), mount));
}

TEST_F(OpenFiles, TheDirectoryItselfCountsAndASiblingWithTheSamePrefixDoesNot) {
  const std::string mount = dir + "/mnt";
  const int beside = open_file(dir + "/mnt-beside/file");
  ASSERT_GE(beside, 0);
  EXPECT_FALSE(has_files_open_under(::getpid(), mount));
  const int itself = ::open(mount.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(itself, 0);
  EXPECT_TRUE(has_files_open_under(::getpid(), mount));
  ::close(itself);
  ::close(beside);
}

TEST_F(OpenFiles, AnotherProcessIsSeenAndAnEndedOneHoldsNothing) {
  const std::string mount = dir + "/mnt";
  int ready[2], finish[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(finish), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = open_file(mount + "/held");
    char byte = fd >= 0 ? 'y' : 'n';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(1);
    if (::read(finish[0], &byte, 1) < 0) ::_exit(1);
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'y');
  EXPECT_TRUE(has_files_open_under(child, mount));
  ASSERT_EQ(::write(finish[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(has_files_open_under(child, mount));
  for (int fd : {ready[0], ready[1], finish[0], finish[1]}) ::close(fd);
}

}  // namespace
}  // namespace capsa
