// Images made for one run (runtime/temporary_image.hpp): --unsquash runs a SIF from a
// sandbox unpacked into --tmpdir, --disable-cache pulls a docker:// image into --tmpdir
// instead of the cache; either is there while the container runs (seen from inside it
// through a bind) and gone afterwards, whatever way the run ends. Root and test user.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_registry.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  return names;
}

TEST(TemporaryImage, UnsquashRunsFromASandboxInTmpdirAndRemovesIt) {
  test::TempDir dir;
  std::string sif = testing::make_image(dir, "unsquash", {{"/marker", "from the image\n"}});
  std::string tmp = dir / "tmp";
  std::filesystem::create_directories(tmp);
  // Inside: the image's file, and the temporary sandbox in --tmpdir it comes from.
  auto run = capsa({"exec", "--unsquash", "--tmpdir", tmp, "-B", tmp + ":/seen", sif, "sh", "-c",
                    "cat /marker; ls /seen/capsa-unsquash-*; cat /seen/capsa-unsquash-*/rootfs/marker"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "from the image\nrootfs\nfrom the image\n") << run.err;
  EXPECT_TRUE(entries(tmp).empty());
  // Without it the same image runs from its squashfs: nothing is unpacked.
  auto plain = capsa({"exec", "--tmpdir", tmp, "-B", tmp + ":/seen", sif, "sh", "-c", "cat /marker; ls /seen"});
  EXPECT_EQ(plain.out, "from the image\n") << plain.err;

  // The command's exit status, and APPTAINER_TMPDIR in place of --tmpdir.
  auto failed = capsa({"exec", "--unsquash", sif, "sh", "-c", "exit 7"}, {"APPTAINER_TMPDIR=" + tmp});
  EXPECT_EQ(failed.exit_code, 7) << failed.err;
  EXPECT_TRUE(entries(tmp).empty());
  // A run that fails to start removes it too.
  auto refused = capsa({"run", "--unsquash", "--tmpdir", tmp, "--app", "nope", sif});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("no SCIF app \"nope\""), std::string::npos) << refused.err;
  EXPECT_TRUE(entries(tmp).empty());
  // A signal a process sends capsa reaches the container; capsa ends the same way.
  auto killed =
      capsa({"exec", "--unsquash", "--tmpdir", tmp, sif, "sh", "-c", "kill -TERM $PPID; sleep 5; echo survived"});
  EXPECT_EQ(killed.out, "") << killed.err;
  EXPECT_TRUE(entries(tmp).empty());
}

TEST(TemporaryImage, DisableCachePullsIntoTmpdirAndLeavesTheCacheUntouched) {
  test::TempDir dir;
  std::string tmp = dir / "tmp", cache = dir / "cache";
  std::filesystem::create_directories(tmp);
  const std::string reference = "docker://" + test::test_registry().plain + "/public/busybox:1.0";
  auto run = capsa({"exec", "--disable-cache", "--tmpdir", tmp, "-B", tmp + ":/seen", reference, "sh", "-c",
                    "ls /seen/capsa-image-*/; echo $APPTAINER_CONTAINER"},
                   {"CAPSA_CACHEDIR=" + cache, "APPTAINER_NOHTTPS=1"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> lines = testing::lines_of(run.out);
  ASSERT_EQ(lines.size(), 2u) << run.out << run.err;
  EXPECT_EQ(lines[0], "image.sif");
  EXPECT_TRUE(lines[1].starts_with(tmp + "/capsa-image-")) << lines[1];
  EXPECT_TRUE(entries(tmp).empty());
  EXPECT_FALSE(std::filesystem::exists(cache) && !entries(cache).empty()) << "the cache was written";
  // APPTAINER_DISABLE_CACHE is the flag's variable; the status comes through.
  auto failed = capsa({"exec", "--tmpdir", tmp, reference, "sh", "-c", "exit 3"},
                      {"CAPSA_CACHEDIR=" + cache, "APPTAINER_NOHTTPS=1", "APPTAINER_DISABLE_CACHE=1"});
  EXPECT_EQ(failed.exit_code, 3) << failed.err;
  EXPECT_TRUE(entries(tmp).empty());
  EXPECT_FALSE(std::filesystem::exists(cache) && !entries(cache).empty()) << "the cache was written";
}

}  // namespace
}  // namespace capsa::runtime
