// `capsa config fakeroot` (config/subid_file.hpp): the /etc/subuid and /etc/subgid
// entries Apptainer's `config fakeroot` writes, on files of the test's own.
#include "config/subid_file.hpp"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "support/error_text.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"

namespace capsa::config {
namespace {

using Lines = std::vector<std::string>;

const SubidUser kAlice{"alice", 2001};
// 2^32 - 131072: the highest start Apptainer hands out.
const std::string kTop = "4294836224";

using test::error_text;

TEST(SubidFile, AddsTheHighestFreeRangeAndKeepsEveryOtherLine) {
  test::TempDir dir;
  const std::string path = dir.write("subuid", "# site comment\nbob:100000:65536\nnot a mapping\n");
  SubidFile file = SubidFile::load(path);
  EXPECT_TRUE(file.add_user(kAlice));
  EXPECT_EQ(file.lines(), (Lines{"# site comment", "bob:100000:65536", "not a mapping", "2001:" + kTop + ":65536"}));
  EXPECT_FALSE(file.add_user(kAlice)) << "a user with an entry keeps it";
  EXPECT_FALSE(file.add_user({"alice", 2001})) << "found by uid as well";
  file.save();
  EXPECT_EQ(test::read_file(path), "# site comment\nbob:100000:65536\nnot a mapping\n2001:" + kTop + ":65536\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(SubidFile, SkipsRangesThatOverlapAnyEntryEvenADisabledOne) {
  test::TempDir dir;
  // The top range is partly taken, the one below it wholly (disabled entries keep theirs).
  SubidFile file = SubidFile::load(
      dir.write("subuid", "carol:4294900000:1000\n!dave:4294770688:65536\nalice-old-name:5:5\n"));
  EXPECT_TRUE(file.add_user({"erin", 3001}));
  EXPECT_EQ(file.lines().back(), "3001:4294705152:65536");
}

TEST(SubidFile, FindsTheUserByNameOrUidAndPrefersTheExactRange) {
  test::TempDir dir;
  SubidFile file = SubidFile::load(dir.write("subuid", "alice:100:10\n2001:200000:65536\nalice:300000:100000\n"));
  EXPECT_TRUE(file.disable_user(kAlice));
  EXPECT_EQ(file.lines(), (Lines{"alice:100:10", "!2001:200000:65536", "alice:300000:100000"}));
  EXPECT_FALSE(file.disable_user(kAlice)) << "already disabled";
  EXPECT_TRUE(file.enable_user(kAlice));
  EXPECT_EQ(file.lines()[1], "2001:200000:65536");
  EXPECT_FALSE(file.enable_user(kAlice));
  EXPECT_TRUE(file.remove_user(kAlice));
  EXPECT_EQ(file.lines(), (Lines{"alice:100:10", "alice:300000:100000"}));
  EXPECT_TRUE(file.remove_user(kAlice)) << "then the largest range above 65536";
  EXPECT_EQ(file.lines(), (Lines{"alice:100:10"}));
  EXPECT_NE(error_text([&] { file.remove_user(kAlice); }).find("no mapping entry for alice"), std::string::npos)
      << "a range smaller than 65536 is not a fakeroot entry";
}

TEST(SubidFile, AMissingFileIsEmptyAndCreatedOnSave) {
  test::TempDir dir;
  SubidFile file = SubidFile::load(dir.path() + "/subgid");
  EXPECT_TRUE(file.lines().empty());
  EXPECT_NE(error_text([&] { file.enable_user(kAlice); }).find(dir.path() + "/subgid: no mapping entry for alice"),
            std::string::npos);
  file.add_user(kAlice);
  file.save();
  EXPECT_EQ(test::read_file(dir.path() + "/subgid"), "2001:" + kTop + ":65536\n");
}

// The command, on both files (CAPSA_SUBUID_FILE and CAPSA_SUBGID_FILE), root only.
class ConfigFakeroot : public ::testing::Test {
 protected:
  test::ProcessResult capsa(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "CAPSA_SUBUID_FILE=" + subuid, "CAPSA_SUBGID_FILE=" + subgid,
                                     test::capsa_binary(), "config", "fakeroot"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv);
  }
  test::TempDir dir;
  const std::string subuid = dir.write("subuid", "bob:100000:65536\n");
  const std::string subgid = dir.write("subgid", "bob:100000:65536\n");
  // A user every machine has; its entry is only ever written to the test's files.
  const std::string user = "nobody";
  const std::string uid = std::to_string(::getpwnam("nobody")->pw_uid);
};

TEST_F(ConfigFakeroot, AddsDisablesEnablesAndRemovesInBothFiles) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only (the refusal is ConfigFakeroot.OnlyRootChangesTheFiles)";
  auto added = capsa({"--add", user});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  for (const std::string& file : {subuid, subgid})
    EXPECT_EQ(test::read_file(file), "bob:100000:65536\n" + uid + ":" + kTop + ":65536\n") << file;
  ASSERT_EQ(capsa({"-d", user}).exit_code, 0);
  EXPECT_EQ(test::read_file(subgid), "bob:100000:65536\n!" + uid + ":" + kTop + ":65536\n");
  ASSERT_EQ(capsa({"--enable", uid}).exit_code, 0);
  EXPECT_EQ(test::read_file(subuid), "bob:100000:65536\n" + uid + ":" + kTop + ":65536\n");
  ASSERT_EQ(capsa({"-r", user}).exit_code, 0);
  EXPECT_EQ(test::read_file(subuid), "bob:100000:65536\n");
  EXPECT_EQ(test::read_file(subgid), "bob:100000:65536\n");
}

TEST_F(ConfigFakeroot, BadRequestsChangeNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only (the refusal is ConfigFakeroot.OnlyRootChangesTheFiles)";
  auto none = capsa({"--remove", user});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "capsa: error: " + subuid + ": no mapping entry for nobody (nothing to remove)\n");
  auto two = capsa({"--add", "--remove", user});
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_NE(two.err.find("give one of --add, --remove, --enable or --disable"), std::string::npos) << two.err;
  auto unknown = capsa({"--add", "no-such-user-capsa"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err, "capsa: error: config fakeroot: no user no-such-user-capsa on this system\n");
  auto huge = capsa({"--add", "99999999999999999999999"});
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_EQ(huge.err, "capsa: error: config fakeroot: no user 99999999999999999999999 on this system\n");
  EXPECT_EQ(test::read_file(subuid), "bob:100000:65536\n");
  EXPECT_EQ(test::read_file(subgid), "bob:100000:65536\n");
}

TEST_F(ConfigFakeroot, OnlyRootChangesTheFiles) {
  if (::geteuid() == 0) GTEST_SKIP() << "the unprivileged side (AddsDisablesEnablesAndRemovesInBothFiles is root's)";
  auto refused = capsa({"--add", user});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.err, "capsa: error: config fakeroot: only root can change /etc/subuid and /etc/subgid\n");
  EXPECT_EQ(test::read_file(subuid), "bob:100000:65536\n");
}

}  // namespace
}  // namespace capsa::config
