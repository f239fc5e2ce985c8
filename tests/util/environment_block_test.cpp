#include "util/environment_block.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/process.hpp"
#include "util/fd.hpp"

namespace capsa {
namespace {

constexpr const char* kVariable = "CAPSA_ENVIRONMENT_BLOCK_TEST_SECRET";
constexpr const char* kSecret = "s3cret-value-that-must-not-show";

// Runs in a fresh exec of this test binary that has the secret in its inherited block.
TEST(EnvironmentBlock, InChildHideKeepsTheValueButClearsTheBlock) {
  if (std::getenv(kVariable) == nullptr) GTEST_SKIP() << "runs only in the child started by the test below";
  ASSERT_NE(read_whole_file("/proc/self/environ").find(kSecret), std::string::npos) << "the block holds it at first";
  const char* names[] = {kVariable, "CAPSA_ENVIRONMENT_BLOCK_TEST_UNSET"};
  hide_inherited_values(names);
  EXPECT_STREQ(std::getenv(kVariable), kSecret);
  EXPECT_EQ(read_whole_file("/proc/self/environ").find(kSecret), std::string::npos);
  hide_inherited_values(names);  // a second call finds the private copy and leaves it
  EXPECT_STREQ(std::getenv(kVariable), kSecret);
}

TEST(EnvironmentBlock, InChildWipeClearsEverything) {
  if (std::getenv(kVariable) == nullptr) GTEST_SKIP() << "runs only in the child started by the test below";
  wipe_inherited_environment();
  EXPECT_EQ(std::getenv(kVariable), nullptr);
  std::string block = read_whole_file("/proc/self/environ");
  EXPECT_EQ(block.find_first_not_of('\0'), std::string::npos) << "the block is all zero bytes";
}

TEST(EnvironmentBlock, HidingAndWipingWorkInAFreshProcess) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");  // not env's own
  for (const char* test : {"InChildHideKeepsTheValueButClearsTheBlock", "InChildWipeClearsEverything"}) {
    auto child = test::run_process(
        {"env", std::string(kVariable) + "=" + kSecret, self, std::string("--gtest_filter=EnvironmentBlock.") + test});
    EXPECT_EQ(child.exit_code, 0) << child.out << child.err;
    EXPECT_NE(child.out.find("[  PASSED  ] 1 test"), std::string::npos) << child.out;
  }
}

}  // namespace
}  // namespace capsa
