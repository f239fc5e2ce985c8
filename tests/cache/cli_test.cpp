// `capsa cache list|clean` as users run it: real binary, real cache directory.
#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cache/cache.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::cache {
namespace {

using capsa::test::run_process;
using capsa::test::TempDir;

const Key kBlob = Key::blob("sha256:" + std::string(64, 'a'));
const Key kSif = Key::sif("sha256:" + std::string(64, 'b'), "linux", "amd64");

class CacheCli : public ::testing::Test {
 protected:
  void SetUp() override {
    Cache cache(root_);
    for (const auto& [key, size] : {std::pair{kBlob, 3000}, std::pair{kSif, 2 << 20}})
      cache.wait_or_produce(key, [size = size](ProducerLock& lock) {
        std::ofstream(lock.partial_path()) << std::string(static_cast<std::size_t>(size), 'x');
      });
  }
  test::ProcessResult capsa(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"env", "CAPSA_CACHEDIR=" + root_, test::capsa_binary(), "cache"});
    return run_process(args, input, 60);
  }
  bool has(const Key& key) { return Cache(root_).has(key); }

  TempDir dir_;
  std::string root_ = dir_ / "cache";
};

TEST_F(CacheCli, ListSummarisesLikeApptainer) {
  auto result = capsa({"list"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "There are 1 container file(s) using 2.00 MiB and 1 oci blob file(s) using 2.93 KiB of space\n"
            "Total space used: 2.00 MiB\n");
}

TEST_F(CacheCli, VerboseListShowsEachEntryAndTypeFilters) {
  auto result = capsa({"list", "-v"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("NAME ", 0), 0u) << result.out;
  EXPECT_NE(result.out.find(kBlob.name()), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(kSif.name()), std::string::npos) << result.out;
  auto only_sif = capsa({"list", "-v", "-T", "sif"});
  EXPECT_EQ(only_sif.out.find(kBlob.name()), std::string::npos) << only_sif.out;
  EXPECT_NE(only_sif.out.find("There are 1 container file(s) using 2.00 MiB and 0 oci blob file(s)"),
            std::string::npos) << only_sif.out;
}

TEST_F(CacheCli, CleanWithoutATerminalAsksNobodyAndRemovesNothing) {
  auto result = capsa({"clean"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("--force"), std::string::npos) << result.err;
  EXPECT_TRUE(has(kBlob) && has(kSif));
}

TEST_F(CacheCli, CleanDryRunShowsWhatWouldGo) {
  auto result = capsa({"clean", "--dry-run", "-T", "blob"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("Would remove blob " + kBlob.name()), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find(kSif.name()), std::string::npos) << result.out;
  EXPECT_TRUE(has(kBlob));
}

TEST_F(CacheCli, ForcedCleanByTypeAndDays) {
  auto recent = capsa({"clean", "-f", "--days", "3"});
  ASSERT_EQ(recent.exit_code, 0) << recent.err;
  EXPECT_TRUE(has(kBlob) && has(kSif)) << "both were used just now";
  auto result = capsa({"clean", "--force", "--type", "oci"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(has(kSif));
  EXPECT_TRUE(has(kBlob));
  EXPECT_NE(result.out.find("Removed 1 entry"), std::string::npos) << result.out;
}

TEST_F(CacheCli, ConfirmationOnATerminal) {
  if (!test::have_program("script")) GTEST_SKIP() << "script(1) is needed for a terminal";
  std::string command = "env CAPSA_CACHEDIR=" + root_ + " " + test::capsa_binary() + " cache clean";
  auto refused = run_process({"script", "-qec", command, "/dev/null"}, "n\n", 60);
  EXPECT_NE(refused.out.find("Do you want to continue? [N/y]"), std::string::npos) << refused.out << refused.err;
  EXPECT_TRUE(has(kBlob) && has(kSif));
  auto accepted = run_process({"script", "-qec", command, "/dev/null"}, "y\n", 60);
  EXPECT_NE(accepted.out.find("Removed 2 entries"), std::string::npos) << accepted.out << accepted.err;
  EXPECT_FALSE(has(kBlob) || has(kSif));
}

TEST_F(CacheCli, UnknownTypeIsAnError) {
  auto result = capsa({"list", "-T", "library"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("unknown cache type \"library\""), std::string::npos) << result.err;
}

TEST(CacheCliLocation, ApptainerCachedirIsHonoured) {
  TempDir dir;
  auto result = run_process({"env", "-u", "CAPSA_CACHEDIR", "APPTAINER_CACHEDIR=" + dir.path(),
                             test::capsa_binary(), "cache", "list"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() + "/cache/capsa/sif"));
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/cache/capsa").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

}  // namespace
}  // namespace capsa::cache
