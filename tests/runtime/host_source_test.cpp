// A bind's host source examined once (runtime/host_source.hpp), and the bind made from it.
#include "runtime/host_source.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <filesystem>

#include "runtime/container_root.hpp"
#include "support/namespace.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime {
namespace {

namespace fs = std::filesystem;

std::string link_target(const std::string& path) { return fs::read_symlink(path).string(); }

TEST(HostSource, TellsDirectoriesFromFilesAndFollowsSymlinks) {
  test::TempDir dir;
  const std::string file = dir.write("file", "x");
  fs::create_directory(dir / "sub");
  fs::create_directory_symlink(dir / "sub", dir / "link");
  HostSource sub = HostSource::examine(dir / "sub");
  EXPECT_TRUE(sub.exists());
  EXPECT_TRUE(sub.directory());
  EXPECT_EQ(link_target(sub.mount_source(dir / "sub")), dir / "sub") << "bound from its descriptor";
  HostSource regular = HostSource::examine(file);
  EXPECT_TRUE(regular.exists());
  EXPECT_FALSE(regular.directory());
  EXPECT_EQ(link_target(regular.mount_source(file)), file);
  HostSource link = HostSource::examine(dir / "link");
  EXPECT_TRUE(link.directory());
  EXPECT_EQ(link_target(link.mount_source(dir / "link")), dir / "sub");
}

TEST(HostSource, AbsentWhenMissingOrBelowAFile) {
  test::TempDir dir;
  const std::string file = dir.write("file", "x");
  EXPECT_FALSE(HostSource::examine(dir / "missing").exists());
  EXPECT_FALSE(HostSource::examine(file + "/below").exists());
  EXPECT_FALSE(HostSource().exists());
}

TEST(HostSource, OneExaminedElsewhereIsBoundByItsPath) {
  HostSource source = HostSource::examined_elsewhere(false);
  EXPECT_TRUE(source.exists());
  EXPECT_FALSE(source.directory());
  EXPECT_EQ(source.mount_source("/some/path"), "/some/path");
}

TEST(HostSource, OnlyBindsAreExamined) {
  std::vector<MountStep> steps = {MountStep{MountStep::Kind::Bind, "/", "/a"}, MountStep{MountStep::Kind::Tmpfs, "", "/tmp"},
                                  MountStep{MountStep::Kind::RecursiveBind, "/proc", "/proc"},
                                  MountStep{MountStep::Kind::SessionFile, "passwd", "/etc/passwd"}};
  std::vector<HostSource> sources = examine_sources(steps);
  ASSERT_EQ(sources.size(), 4u);
  EXPECT_TRUE(sources[0].exists());
  EXPECT_FALSE(sources[1].exists());
  EXPECT_TRUE(sources[2].directory());
  EXPECT_FALSE(sources[3].exists());
}

// What was examined is what gets bound: a directory swapped in at the path in between is not.
TEST(HostSource, TheBindIsOfWhatWasExamined) {
  test::TempDir dir;
  fs::create_directories(dir / "root/target");
  fs::create_directory(dir / "source");
  dir.write("source/examined", "");
  int status = test::in_private_mount_namespace([&] {
    HostSource source = HostSource::examine(dir / "source");
    fs::rename(dir / "source", dir / "moved");
    fs::create_directory(dir / "source");
    dir.write("source/swapped-in", "");
    UniqueFd root = open_file(dir / "root", O_PATH | O_DIRECTORY);
    apply_step(root.get(), "", MountStep{MountStep::Kind::Bind, dir / "source", "/target"}, source);
    const bool ok = fs::exists(dir / "root/target/examined") && !fs::exists(dir / "root/target/swapped-in");
    ::umount2((dir / "root/target").c_str(), MNT_DETACH);
    return ok;
  });
  if (status == 77) GTEST_SKIP() << "no private mount namespace here";
  EXPECT_EQ(status, 0);
}

}  // namespace
}  // namespace capsa::runtime
