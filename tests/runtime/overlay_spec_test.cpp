// What --overlay values name (runtime/overlay_spec.hpp): PATH[:ro|:rw] entries in comma
// lists, and the ext3 super block fields capsa decides on (an ext3 image, and whether it
// was unmounted cleanly), read from images e2fsprogs made.
#include "runtime/overlay_spec.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include "runtime/overlay_support.hpp"
#include "support/temp_dir.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

TEST(OverlaySpec, EntriesAreCommaListsWithAnOptionalMode) {
  auto specs = parse_overlays({"/a,/b:ro", "/c:rw", "/d:x:ro", ",/e,"});
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[0].path, "/a");
  EXPECT_TRUE(specs[0].writable);
  EXPECT_EQ(specs[1].path, "/b");
  EXPECT_FALSE(specs[1].writable);
  EXPECT_EQ(specs[2].path, "/c");
  EXPECT_TRUE(specs[2].writable);
  EXPECT_EQ(specs[3].path, "/d:x");
  EXPECT_FALSE(specs[3].writable);
  EXPECT_EQ(specs[4].path, "/e");
}

TEST(OverlaySpec, AnApptainerExt3ImageIsRecognisedAndCleanUntilMarkedOtherwise) {
  test::TempDir dir;
  const std::string img = dir / "o.img";
  testing::make_apptainer_ext3_overlay(img);
  {
    UniqueFd fd = open_file(img, O_RDONLY);
    Ext3Superblock sb = read_ext3_superblock(fd.get(), 0);
    EXPECT_TRUE(sb.valid);
    EXPECT_TRUE(sb.clean);
  }
  ASSERT_EQ(testing::e2fs_tool({"debugfs", "-w", "-R", "ssv state 0", img}).exit_code, 0);
  UniqueFd fd = open_file(img, O_RDONLY);
  EXPECT_FALSE(read_ext3_superblock(fd.get(), 0).clean);
  EXPECT_FALSE(read_ext3_superblock(fd.get(), 4096).valid) << "nothing at another offset";
}

TEST(OverlaySpec, Ext4IsNotAnExt3Overlay) {
  test::TempDir dir;
  const std::string img = dir / "o.ext4";
  ASSERT_EQ(test::run_process({"truncate", "-s", "64M", img}).exit_code, 0);
  ASSERT_EQ(testing::e2fs_tool({"mkfs.ext4", "-q", img}).exit_code, 0);
  UniqueFd fd = open_file(img, O_RDONLY);
  EXPECT_FALSE(read_ext3_superblock(fd.get(), 0).valid) << "extents and 64-bit are not ext3 (Apptainer's check)";
}

}  // namespace
}  // namespace capsa::runtime
