// --sharens: containers started by one process share their namespaces and image mount
// (a hidden instance named after that process), and it ends with that process; as root
// and unprivileged, nothing left afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "runtime/run_support.hpp"
#include "support/background.hpp"
#include "support/leaks.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

class ShareNamespaces : public ::testing::Test, public test::PrivateContainers {
 protected:
  ShareNamespaces() : PrivateContainers("busybox.sif", "CAPSA_SHARENS_TEST") {}
  void SetUp() override { ASSERT_EQ(::chdir("/"), 0); }

  // `script` run by one shell, the common parent; $C is capsa, $I the image.
  test::ProcessResult from_one_parent(const std::string& script) {
    return test::run_process(
        {"env", marker, "CAPSA_SESSION_DIR=" + session, "C=" + test::capsa_binary(), "I=" + image, "sh", "-c", script});
  }
};

TEST_F(ShareNamespaces, SiblingsShareNamespacesAndTheImageMount) {
  const auto result = from_one_parent(
      R"($C exec --sharens --writable-tmpfs "$I" sh -c 'echo written-by-first > /marker; readlink /proc/self/ns/mnt; readlink /proc/self/ns/pid'
$C exec --sharens "$I" sh -c 'cat /marker; readlink /proc/self/ns/mnt; readlink /proc/self/ns/pid'
$C instance list sharens-$$ | tail -n +2 | cut -d' ' -f1)");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines = testing::lines_of(result.out);
  ASSERT_EQ(lines.size(), 6U) << result.out;
  EXPECT_EQ(lines[2], "written-by-first");  // the second sees the first's write: one root
  EXPECT_EQ(lines[0], lines[3]);            // one mount namespace
  EXPECT_EQ(lines[1], lines[4]);            // one PID namespace
  EXPECT_NE(lines[0], testing::own_namespace("mnt"));
  EXPECT_EQ(lines[5].rfind("sharens-", 0), 0U) << lines[5];
  // The parent has ended: so does the shared instance.
  EXPECT_TRUE(test::eventually(
      [&] {
        return testing::capsa({"instance", "list", lines[5]}).out.find(lines[5]) == std::string::npos;
      },
      15));
  // Nor any file of it: the name is used once (record, locks, logs).
  auto files_named = [&] {
    return test::run_process({"sh", "-c",
                              "ls -a /var/lib/capsa/instances/*/*/* \"$HOME\"/.capsa/instances/*/*/* 2>/dev/null | "
                              "grep -F \"$0\" || true",
                              lines[5] + "."})
        .out;
  };
  EXPECT_TRUE(test::eventually([&] { return files_named().empty(); }, 10)) << files_named();
  expect_nothing_left();
}

TEST_F(ShareNamespaces, ParentsDoNotShare) {
  // Two shells at once, each the parent of its own container (the sleep keeps each shell
  // from exec'ing capsa, and both instances alive while the other runs).
  const auto result = from_one_parent(
      R"(sh -c '$C exec --sharens "$I" readlink /proc/self/ns/mnt; sleep 2' &
sh -c '$C exec --sharens "$I" readlink /proc/self/ns/mnt; sleep 2' &
wait)");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> lines = testing::lines_of(result.out);
  ASSERT_EQ(lines.size(), 2U) << result.out;
  EXPECT_NE(lines[0], lines[1]);
  expect_nothing_left();
}

TEST_F(ShareNamespaces, AnotherImageIsRefusedInOneLine) {
  const std::string other = work / "other.sif";
  ASSERT_EQ(test::run_process({"cp", image, other}).exit_code, 0);
  const auto result = from_one_parent(R"($C exec --sharens "$I" true && $C exec --sharens )" + other + " true");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--sharens: the containers of process"), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  expect_nothing_left();
}

}  // namespace
}  // namespace capsa::runtime
