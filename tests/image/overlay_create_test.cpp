// `capsa overlay create`: ext3 images laid out as Apptainer's overlay create makes them,
// without root (e2fsprogs), and overlay partitions added to a SIF, listed by
// `capsa sif list` exactly as Debian's siftool lists them. Root and unprivileged.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::image {
namespace {

namespace fs = std::filesystem;

test::ProcessResult capsa(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {test::capsa_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv);
}

test::ProcessResult e2fs(const std::vector<std::string>& argv) {
  std::vector<std::string> full = {"env", "PATH=/usr/sbin:/sbin:/usr/bin:/bin"};
  full.insert(full.end(), argv.begin(), argv.end());
  return test::run_process(full);
}

// "MODE UID GID" of a path inside an ext3 image, from debugfs.
std::string stat_inside(const std::string& image, const std::string& path) {
  std::string out = e2fs({"debugfs", "-R", "stat " + path, image}).out;
  std::smatch mode, user;
  if (!std::regex_search(out, mode, std::regex(R"(Mode:\s+(\d+))")) ||
      !std::regex_search(out, user, std::regex(R"(User:\s+(\d+)\s+Group:\s+(\d+))")))
    return "missing";
  return mode[1].str() + " " + user[1].str() + " " + user[2].str();
}

TEST(OverlayCreate, MakesApptainersLayoutOwnedByTheCallerWithoutRoot) {
  test::TempDir dir;
  const std::string img = dir / "overlay.img";
  auto r = capsa({"overlay", "create", img});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  struct stat st {};
  ASSERT_EQ(::stat(img.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 64 << 20) << "64 MiB by default";
  EXPECT_GE(st.st_blocks * 512, 64 << 20) << "allocated, not sparse, without --sparse";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string owner = std::to_string(::getuid()) + " " + std::to_string(::getgid());
  EXPECT_EQ(stat_inside(img, "/upper"), "0755 " + owner);
  EXPECT_EQ(stat_inside(img, "/work"), "0755 " + owner);
  auto fsck = e2fs({"e2fsck", "-fn", img});
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
  auto type = e2fs({"dumpe2fs", "-h", img});
  EXPECT_NE(type.out.find("has_journal"), std::string::npos) << "ext3: a journal";
  EXPECT_EQ(type.out.find("extent"), std::string::npos) << "ext3: no ext4 features";
  EXPECT_FALSE(fs::exists(img + ".ext3")) << "nothing but the image is left";
}

TEST(OverlayCreate, SizeSparseCreateDirsAndFakeroot) {
  test::TempDir dir;
  const std::string img = dir / "big.img";
  auto r = capsa({"overlay", "create", "--size", "128", "--sparse", "--create-dir", "/opt/conda", "--create-dir",
                  "usr/local/share", "--fakeroot", img});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(img.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 128 << 20);
  EXPECT_LT(st.st_blocks * 512, 64 << 20) << "sparse";
  for (const char* path : {"/upper", "/work", "/upper/opt", "/upper/opt/conda", "/upper/usr/local/share"})
    EXPECT_EQ(stat_inside(img, path), "0755 0 0") << path << ": root's, for --fakeroot containers";
  EXPECT_EQ(e2fs({"e2fsck", "-fn", img}).exit_code, 0);
}

TEST(OverlayCreate, RefusesWhatItCannotMakeAndLeavesNothing) {
  test::TempDir dir;
  const std::string existing = dir.write("notes.txt", "mine\n");
  auto r = capsa({"overlay", "create", existing});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "capsa: error: " + existing +
                       " already exists and is not a SIF image: destination image must be SIF image (or a new file)\n");
  EXPECT_EQ(test::read_file(existing), "mine\n");
  const std::string img = dir / "o.img";
  ASSERT_EQ(capsa({"overlay", "create", img}).exit_code, 0);
  auto again = capsa({"overlay", "create", img});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "capsa: error: EXT3 overlay image " + img + " already exists\n");
  auto small = capsa({"overlay", "create", "--size", "32", dir / "small.img"});
  EXPECT_EQ(small.exit_code, 1);
  EXPECT_EQ(small.err, "capsa: error: image size must be equal or greater than 64 MiB\n");
  auto outside = capsa({"overlay", "create", "--create-dir", "../escape", dir / "bad.img"});
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_EQ(outside.err, "capsa: error: --create-dir ../escape: overlay directory created outside of overlay layout\n");
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir.path())) left.push_back(entry.path().filename());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"notes.txt", "o.img"}));
}

TEST(OverlayCreate, AddsAnOverlayPartitionToASifListedAsSiftoolListsIt) {
  test::TempDir dir;
  const std::string sif = dir / "image.sif";
  fs::copy_file(test::sif_fixture("real/busybox_amd64.sif"), sif);
  auto signed_sif = capsa({"overlay", "create", sif});
  EXPECT_EQ(signed_sif.exit_code, 1);
  EXPECT_EQ(signed_sif.err, "capsa: error: SIF image " + sif + " is signed: could not add writable overlay\n");
  ASSERT_EQ(test::run_process({"siftool", "del", "5", sif}).exit_code, 0);  // its signature
  auto r = capsa({"overlay", "create", "--size", "64", sif});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ours = capsa({"sif", "list", sif});
  auto theirs = test::run_process({"siftool", "list", sif});
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  EXPECT_EQ(ours.out, theirs.out);
  EXPECT_NE(ours.out.find("FS (Ext3/Overlay/amd64)"), std::string::npos) << ours.out;
  auto again = capsa({"overlay", "create", sif});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("a writable overlay partition already exists in " + sif), std::string::npos) << again.err;
  EXPECT_FALSE(fs::exists(sif + ".ext3"));
}

}  // namespace
}  // namespace capsa::image
