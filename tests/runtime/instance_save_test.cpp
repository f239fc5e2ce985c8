// `capsa instance save NAME FILE` (runtime/instance_save.hpp), as root and as the
// unprivileged test user: the SIF holds the image with what the container wrote and
// without what is mounted on it, runs again, and a failed save leaves no file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/instance_support.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::instance_testing {
namespace {

// Files beside `file` whose names start with its own: a save's temporaries.
int leftovers(const std::string& file) {
  int count = 0;
  const auto name = std::filesystem::path(file).filename().string();
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(file).parent_path())) {
    const auto other = entry.path().filename().string();
    count += other.starts_with(name) && other != name;
  }
  return count;
}

TEST(InstanceSave, TheRootWithItsWritesAndWithoutItsMounts) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  const std::string name = unique_name("save");
  StopOnExit guard(name);
  std::filesystem::create_directories(dir / "data");
  dir.write("data/host-file", "host\n");
  ASSERT_EQ(
      capsa({"instance", "start", "--fakeroot", "--writable-tmpfs", "--bind", (dir / "data") + ":/data", image, name})
          .exit_code,
      0);
  auto wrote = capsa({"exec", "instance://" + name, "/bin/sh", "-c",
                      "echo kept > /written && rm /.singularity.d/runscript && ls /data/host-file"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  const std::string saved = dir / "saved.sif";
  dir.write("saved.sif", "an older file, replaced whole\n");
  auto save = capsa({"instance", "save", name, saved});
  ASSERT_EQ(save.exit_code, 0) << save.err;
  EXPECT_EQ(leftovers(saved), 0);
  const std::string check =
      "cat /written; ls /.singularity.d/runscript 2>/dev/null || echo no-runscript; ls /data 2>/dev/null | wc -l";
  auto again = capsa({"exec", saved, "/bin/sh", "-c", check});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  // /data is the bind's mount point only: empty, the host's file is not in the image.
  EXPECT_EQ(again.out, "kept\nno-runscript\n0\n") << again.err;
}

TEST(InstanceSave, AFailedSaveLeavesNothing) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  auto none = capsa({"instance", "save", unique_name("absent"), dir / "x.sif"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("no instance named"), std::string::npos) << none.err;
  const std::string name = unique_name("save-fail");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "start", "--fakeroot", image, name}).exit_code, 0);
  auto missing_dir = capsa({"instance", "save", name, dir / "no-such-dir/x.sif"});
  EXPECT_NE(missing_dir.exit_code, 0);
  EXPECT_NE(missing_dir.err.find("instance save: " + name), std::string::npos) << missing_dir.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "no-such-dir"));
  // Unprivileged, --fakeroot is needed to read the whole image.
  if (::getuid() != 0) {
    const std::string plain = unique_name("save-plain");
    StopOnExit plain_guard(plain);
    ASSERT_EQ(capsa({"instance", "start", image, plain}).exit_code, 0);
    auto refused = capsa({"instance", "save", plain, dir / "x.sif"});
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("runs without --fakeroot"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "x.sif"));
    EXPECT_EQ(leftovers(dir / "x.sif"), 0);
  }
}

}  // namespace
}  // namespace capsa::instance_testing
