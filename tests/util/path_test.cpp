// The path questions of util/path.hpp, asked of real files, directories and links.
#include "util/path.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "support/temp_dir.hpp"

namespace capsa {
namespace {

using test::TempDir;

TEST(Path, DirectoryOfKeepsWhatComesBeforeTheLastSlash) {
  EXPECT_EQ(directory_of("a/b/c"), "a/b");
  EXPECT_EQ(directory_of("/a"), "/");
  EXPECT_EQ(directory_of("a"), ".");
  EXPECT_EQ(directory_of("/a/b"), "/a");
}

TEST(Path, ADanglingLinkExistsOnlyWithoutFollowingIt) {
  TempDir dir;
  std::string file = dir.write("file", "x");
  std::string dangling = dir / "dangling";
  ASSERT_EQ(::symlink((dir / "missing").c_str(), dangling.c_str()), 0);
  EXPECT_TRUE(path_exists(file));
  EXPECT_TRUE(path_exists(file, FollowLinks::yes));
  EXPECT_TRUE(path_exists(dangling));
  EXPECT_FALSE(path_exists(dangling, FollowLinks::yes));
  EXPECT_FALSE(path_exists(dir / "missing"));
}

TEST(Path, IsDirectoryFollowsLinks) {
  TempDir dir;
  std::string sub = dir / "sub";
  std::filesystem::create_directory(sub);
  std::string link = dir / "link";
  ASSERT_EQ(::symlink(sub.c_str(), link.c_str()), 0);
  EXPECT_TRUE(is_directory(sub));
  EXPECT_TRUE(is_directory(link));
  EXPECT_FALSE(is_directory(dir.write("file", "x")));
  EXPECT_FALSE(is_directory(dir / "missing"));
}

}  // namespace
}  // namespace capsa
