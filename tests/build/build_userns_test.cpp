// `build --userns`: root builds in a user namespace as anyone else does; %post sees a
// user namespace's mapping instead of the host's identity map.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::build {
namespace {

std::string build_uid_map(const test::TempDir& dir, const std::vector<std::string>& flags) {
  const std::string def =
      dir.write("userns.def", "Bootstrap: localimage\nFrom: " + test::sif_fixture("real/busybox_amd64.sif") +
                                  "\n%post\n  cat /proc/self/uid_map > /uid_map\n");
  std::vector<std::string> argv = {test::capsa_binary(), "build", "--sandbox", "-F"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {dir / "out", def});
  const test::ProcessResult result = test::run_process(argv, "", 300);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  // Its words, one blank between each: the kernel pads the columns.
  std::istringstream words(test::read_file(dir / "out/uid_map"));
  std::string out;
  for (std::string word; words >> word;) out += (out.empty() ? "" : " ") + word;
  return out;
}

TEST(BuildUserns, BuildsInAUserNamespace) {
  test::TempDir dir;
  const std::string identity = "0 0 4294967295";
  const std::string with_userns = build_uid_map(dir, {"--userns"});
  EXPECT_EQ(with_userns.find(identity), std::string::npos) << with_userns;
  EXPECT_FALSE(with_userns.empty());
  if (::geteuid() == 0) {  // without it root builds as real root: the host's identity map
    EXPECT_NE(build_uid_map(dir, {}).find(identity), std::string::npos);
  }
}

}  // namespace
}  // namespace capsa::build
