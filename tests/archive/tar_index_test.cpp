// Members of a tar written by GNU tar are found at their exact byte ranges, through
// ./ prefixes, long (pax/GNU) names and symlinks; compressed and non-tar files are refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "archive/image_files.hpp"
#include "archive/tar_index.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::archive {
namespace {

using test::run_process;
using test::TempDir;

std::string bytes_at(const std::string& path, const TarMember& member) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(member.offset));
  std::string out(member.size, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

TEST(TarIndex, FindsEachMembersBytesInPlace) {
  TempDir dir;
  const std::string long_dir = std::string(120, 'd');
  ASSERT_EQ(run_process({"mkdir", "-p", dir / ("tree/" + long_dir)}).exit_code, 0);
  dir.write("tree/a.json", "{\"a\":1}");
  dir.write("tree/" + long_dir + "/blob", std::string(3000, 'x') + "end");
  ASSERT_EQ(run_process({"ln", "-s", "../a.json", dir / ("tree/" + long_dir + "/link")}).exit_code, 0);
  for (const char* format : {"gnu", "pax"}) {
    const std::string tar = dir / (std::string(format) + ".tar");
    auto made = run_process({"tar", "--format", format, "-C", dir / "tree", "-cf", tar, "."});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    TarIndex index(tar);
    const TarMember* a = index.find("a.json");
    ASSERT_NE(a, nullptr) << format;
    EXPECT_EQ(bytes_at(tar, *a), "{\"a\":1}") << format;
    const TarMember* blob = index.find(long_dir + "/blob");
    ASSERT_NE(blob, nullptr) << format;
    EXPECT_EQ(bytes_at(tar, *blob), std::string(3000, 'x') + "end") << format;
    const TarMember* link = index.find("./" + long_dir + "/link");
    ASSERT_NE(link, nullptr) << format << ": symlinks inside the archive are followed";
    EXPECT_EQ(link->offset, a->offset);
    EXPECT_EQ(index.find("missing"), nullptr);
  }
}

TEST(TarIndex, CompressedAndOtherFilesAreRefusedByName) {
  TempDir dir;
  std::filesystem::create_directories(dir / "tree");
  dir.write("tree/x", "x");
  ASSERT_EQ(run_process({"tar", "-C", dir / "tree", "-czf", dir / "x.tar.gz", "."}).exit_code, 0);
  try {
    TarIndex index(dir / "x.tar.gz");
    ADD_FAILURE() << "a gzip archive was indexed";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("compressed archive (gzip)"), std::string::npos) << e.what();
  }
  const std::string text = dir.write("notes.txt", "just some text, not a tar archive at all\n");
  try {
    TarIndex index(text);
    ADD_FAILURE() << "a text file was indexed";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("not a tar archive"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TarIndex(dir / "absent.tar"), SystemError);
}

TEST(ImageFiles, NamesCannotLeaveALayoutDirectory) {
  TempDir dir;
  std::filesystem::create_directories(dir / "layout");
  dir.write("outside", "secret");
  dir.write("layout/inside", "ok");
  ImageFiles files = ImageFiles::directory(dir / "layout");
  EXPECT_TRUE(files.has("inside"));
  EXPECT_FALSE(files.has("../outside"));
  EXPECT_THROW(files.read("../outside", 100, "blob"), FormatError);
  EXPECT_EQ(files.read("inside", 100, "blob"), "ok");
}

}  // namespace
}  // namespace capsa::archive
