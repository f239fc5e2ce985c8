// The overlay partition of a SIF (`capsa overlay create IMAGE.sif`): `--writable` writes
// into it and the writes are in the SIF for the next run, where they show read-only
// without --writable, as in Apptainer; a SIF given to --overlay lends its partition.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/leaks.hpp"

namespace capsa::runtime {
namespace {

namespace fs = std::filesystem;
using testing::capsa;

class OverlaySif : public ::testing::Test, protected test::PrivateContainers {
 protected:
  OverlaySif() : PrivateContainers("with-overlay.sif", "CAPSA_OVERLAY_SIF_MARK") {
    // The fixture is signed, and a signed SIF takes no overlay partition (Apptainer's rule).
    EXPECT_EQ(test::run_process({"siftool", "del", "5", image}).exit_code, 0);
    auto made = run({"overlay", "create", image});
    EXPECT_EQ(made.exit_code, 0) << made.err;
  }
  void TearDown() override { expect_nothing_left(); }
  test::ProcessResult run(const std::vector<std::string>& args) {
    return capsa(args, {"CAPSA_SESSION_DIR=" + session, marker}, "", work.path());
  }
};

TEST_F(OverlaySif, WritableWritesIntoThePartitionAndLaterRunsSeeItReadOnly) {
  auto wrote =
      run({"exec", "--writable", image, "sh", "-c", "mkdir -p /opt/tool && echo in-sif > /opt/tool/f && echo ok"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  EXPECT_EQ(wrote.out, "ok\n");
  auto read =
      run({"exec", image, "sh", "-c", "cat /opt/tool/f; touch /opt/tool/g 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "in-sif\nREFUSED\n");
  auto again = run({"exec", "--writable", image, "sh", "-c", "cat /opt/tool/f && rm /opt/tool/f && echo gone"});
  EXPECT_EQ(again.out, "in-sif\ngone\n") << again.err;
  EXPECT_EQ(run({"exec", image, "ls", "/opt/tool"}).out, "");
}

TEST_F(OverlaySif, ASifGivenToOverlayLendsItsPartition) {
  const std::string other = work / "other.sif";
  fs::copy_file(image, other);
  auto wrote = run({"exec", "--overlay", other, testing::busybox_sif(), "sh", "-c", "echo lent > /lent"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  auto read = run({"exec", "--overlay", other + ":ro", testing::busybox_sif(), "cat", "/lent"});
  EXPECT_EQ(read.out, "lent\n") << read.err;
  EXPECT_EQ(run({"exec", image, "cat", "/lent"}).exit_code, 1) << "the copy is another file";
  expect_nothing_left(other);
}

}  // namespace
}  // namespace capsa::runtime
