// unpack_to_directory: hostile images never write outside the target, symlinks of the
// image are never followed, device nodes are made only where allowed. (Round trips
// through pack_directory: tests/convert/pack_test.cpp.)
#include "squashfs/unpack.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "convert/convert.hpp"
#include "convert/merge_tree.hpp"
#include "convert/squashfs_writer.hpp"
#include "runtime/sandbox_run.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"

namespace capsa::squashfs {
namespace {

using test::run_process;
using test::TempDir;

class Unpack : public ::testing::Test {
 protected:
  TempDir work;
};

TEST_F(Unpack, RefusesANonEmptyTarget) {
  ASSERT_EQ(::mkdir((work / "full").c_str(), 0755), 0);
  work.write("full/something", "x");
  EXPECT_THROW(unpack_to_directory(test::sif_fixture("real/busybox_amd64.sif"), work / "full"), Error);
  EXPECT_THROW(unpack_to_directory(work / "full/something", work / "new"), FormatError) << "not an image";
}

// A squashfs image written with the converter's writer from a hand-made tree, whose
// names need not be valid: what a hostile image can hold.
std::string hostile_image(const std::string& path, const std::map<std::string, std::string>& top_files,
                          const std::string& sub_dir_name, const std::string& symlink_target) {
  convert::ConvertOptions options;
  options.workers = 1;
  convert::SquashfsWriter writer(path, options);
  convert::Node root;
  root.kind = convert::Kind::Directory;
  auto file = [&](const std::string& content) {
    auto node = std::make_unique<convert::Node>();
    node->kind = convert::Kind::File;
    node->attrs.mode = 0644;
    node->file_inode = writer.begin_file();
    writer.append(content.data(), content.size());
    writer.end_file();
    return node;
  };
  for (const auto& [name, content] : top_files) root.children[name] = file(content);
  if (!sub_dir_name.empty()) {
    auto dir = std::make_unique<convert::Node>();
    dir->kind = convert::Kind::Directory;
    dir->children["escaped"] = file("from a hostile image\n");
    root.children[sub_dir_name] = std::move(dir);
  }
  if (!symlink_target.empty()) {
    auto link = std::make_unique<convert::Node>();
    link->kind = convert::Kind::Symlink;
    link->attrs.mode = 0777;
    link->target = symlink_target;
    root.children["evil-link"] = std::move(link);
  }
  writer.finish(root, std::nullopt);
  return path;
}

TEST_F(Unpack, HostileNamesNeverWriteOutsideTheTarget) {
  ASSERT_EQ(::mkdir((work / "deep").c_str(), 0755), 0);
  const std::string target = work / "deep/target";
  for (const std::string name : {"..", ".", "a/../..", "/abs"}) {
    SCOPED_TRACE(name);
    std::string image = hostile_image(work / "hostile.squashfs", {{"ok", "fine\n"}}, name, "");
    EXPECT_THROW(unpack_to_directory(image, target), FormatError);
    EXPECT_FALSE(std::filesystem::exists(work / "escaped"));
    EXPECT_FALSE(std::filesystem::exists(work / "deep/escaped"));
    EXPECT_FALSE(std::filesystem::exists("/escaped"));
    runtime::remove_sandbox(target, runtime::RootMode::fakeroot_emulated);
  }
  for (const std::string& name : std::vector<std::string>{"x/y", "../up"}) {
    SCOPED_TRACE(name);
    std::string image = hostile_image(work / "hostile.squashfs", {{name, "payload"}}, "", "");
    EXPECT_THROW(unpack_to_directory(image, target), FormatError);
    EXPECT_FALSE(std::filesystem::exists(work / "deep/target/x/y"));
    runtime::remove_sandbox(target, runtime::RootMode::fakeroot_emulated);
  }
}

TEST_F(Unpack, SymlinksOfTheImageAreNeverFollowed) {
  ASSERT_EQ(::mkdir((work / "outside").c_str(), 0755), 0);
  // The link points at a host directory; the image's own entries must land beside it.
  std::string image = hostile_image(work / "link.squashfs", {{"z-after-link", "inside\n"}}, "", work / "outside");
  unpack_to_directory(image, work / "target");
  struct stat st {};
  ASSERT_EQ(::lstat((work / "target/evil-link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(std::filesystem::read_symlink(work / "target/evil-link"), work / "outside");
  EXPECT_TRUE(std::filesystem::is_empty(work / "outside"));
  EXPECT_EQ(test::read_file(work / "target/z-after-link"), "inside\n");
}

TEST_F(Unpack, DeviceNodesAreMadeByRootAndSkippedWithAWarningOtherwise) {
  if (!test::have_program("gensquashfs")) GTEST_SKIP() << "gensquashfs (squashfs-tools-ng) missing";
  std::string description = work.write("desc",
                                       "dir /dev 0755 0 0\nnod /dev/null 0666 0 0 c 1 3\n"
                                       "nod /dev/loop9 0660 0 6 b 7 9\nfile /data 0644 0 0 " +
                                           (work / "data") + "\n");
  work.write("data", "data\n");
  auto made = run_process({"gensquashfs", "-q", "-F", description, "-D", work.path(), work / "dev.squashfs"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  unpack_to_directory(work / "dev.squashfs", work / "target");
  EXPECT_EQ(test::read_file(work / "target/data"), "data\n");
  struct stat st {};
  if (::geteuid() == 0) {
    ASSERT_EQ(::lstat((work / "target/dev/null").c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_EQ(st.st_rdev, ::makedev(1, 3));
    ASSERT_EQ(::lstat((work / "target/dev/loop9").c_str(), &st), 0);
    EXPECT_TRUE(S_ISBLK(st.st_mode));
    EXPECT_EQ(st.st_rdev, ::makedev(7, 9));
    EXPECT_EQ(st.st_gid, 6u);
  } else {
    EXPECT_NE(::lstat((work / "target/dev/null").c_str(), &st), 0) << "skipped";
  }
}

}  // namespace
}  // namespace capsa::squashfs
