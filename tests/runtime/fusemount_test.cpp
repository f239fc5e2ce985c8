// --fusemount: a FUSE program the user names serves a file system mounted inside the
// container (capsa mounts /dev/fuse and passes /dev/fd/N), from the host (host:) or from
// the image (container:), as root and unprivileged; bad specs give one line; nothing of
// it is left running or mounted afterwards.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/leaks.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

bool one_line(const std::string& text) { return !text.empty() && text.find('\n') == text.size() - 1; }

class FuseMount : public ::testing::Test, public test::PrivateContainers {
 protected:
  FuseMount() : PrivateContainers("busybox.sif", "CAPSA_FUSEMOUNT_TEST") {}

  std::string squashfs;  // work/files.sqfs: sub/hello

  void SetUp() override {
    ASSERT_EQ(::chdir("/"), 0);
    ::chmod(work.path().c_str(), 0755);
    ASSERT_EQ(test::run_process({"mkdir", "-p", work / "tree/sub", work / "mnt"}).exit_code, 0);
    work.write("tree/sub/hello", "served by squashfuse\n");
    squashfs = work / "files.sqfs";
    auto made = test::run_process({"mksquashfs", work / "tree", squashfs, "-quiet", "-noappend"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  test::ProcessResult run(const std::vector<std::string>& flags, const std::string& image_path,
                          const std::string& script) {
    std::vector<std::string> args = {"exec", "-B", work.path() + ":/data"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {image_path, "sh", "-c", script});
    return testing::capsa(args, {marker, "CAPSA_SESSION_DIR=" + session});
  }

  void expect_gone() {
    expect_nothing_left();
    expect_nothing_left(squashfs);  // no squashfuse naming it, no mount of it
  }
};

constexpr const char* kRead = "cat /data/mnt/sub/hello && grep ' /data/mnt ' /proc/self/mountinfo";

TEST_F(FuseMount, HostProgramServesAMountInsideTheContainer) {
  const auto result = run({"--fusemount", "host:squashfuse " + squashfs + " /data/mnt"}, image, kRead);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("served by squashfuse\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(" - fuse squashfuse "), std::string::npos) << result.out;
  // Not on the host: the mount is the container's.
  EXPECT_FALSE(std::filesystem::exists(work / "mnt/sub/hello"));
  expect_gone();
}

TEST_F(FuseMount, ImagesOwnProgramServesItWithContainer) {
  // A sandbox with the host's squashfuse and its libraries: the image's own program.
  const std::string sandbox = testing::make_busybox_sandbox(work, "fuse-sandbox");
  const auto copied = test::run_process(
      {"sh", "-c",
       "set -e; cp --parents /usr/bin/squashfuse \"$0\"; "
       "for f in $(ldd /usr/bin/squashfuse | grep -o '/[^ ]*'); do cp -L --parents \"$f\" \"$0\"; done",
       sandbox});
  ASSERT_EQ(copied.exit_code, 0) << copied.err;
  const auto result = run({"--fusemount", "container:/usr/bin/squashfuse /data/files.sqfs /data/mnt"}, sandbox, kRead);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("served by squashfuse\n"), std::string::npos) << result.out;
  expect_gone();
  EXPECT_TRUE(test::processes_with_argument("/data/files.sqfs").empty())
      << test::joined(test::processes_with_argument("/data/files.sqfs"));
}

TEST_F(FuseMount, BadSpecsGiveOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"squashfuse " + squashfs + " /data/mnt", "expected host:PROGRAM"},
      {"host-daemon:squashfuse " + squashfs + " /data/mnt", "host-daemon: is not supported"},
      {"host:squashfuse " + squashfs + " data/mnt", "must be an absolute path"},
      {"host:/data/mnt", "give the FUSE program and then the mount point"},
      {"host:squashfuse " + squashfs + " /data/missing", "the mount point does not exist in the container"},
      {"host:capsa-no-such-fuse-program " + squashfs + " /data/mnt", "(exit status 127): capsa-no-such-fuse-program: "},
      {"host:squashfuse /nonexistent.sqfs /data/mnt", "Can't open squashfs image"},
  };
  for (const auto& [spec, expected] : cases) {
    const auto result = run({"--fusemount", spec}, image, "echo ran");
    EXPECT_NE(result.exit_code, 0) << spec;
    EXPECT_EQ(result.out, "") << spec;
    EXPECT_TRUE(one_line(result.err)) << spec << ": " << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << spec << ": " << result.err;
  }
  expect_gone();
}

}  // namespace
}  // namespace capsa::runtime
