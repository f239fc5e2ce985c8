// Kept images (runtime/kept_image.hpp): back-to-back containers of one image share one
// mount of it while they come within the linger time, and nothing is left once it has
// passed. The suites run with CAPSA_KEEP_IMAGE_SECONDS=0 (CapsaTesting.cmake); each
// test here sets its own linger.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/run_support.hpp"
#include "support/leaks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime {
namespace {

using testing::capsa;

// A private session directory per test: leaks.hpp finds every container still set up.
class KeptImages : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(dir_.path().c_str(), 0755);
    session_ = dir_.path() + "/session";
    std::filesystem::create_directory(session_);
    image_ = testing::make_image(dir_, "kept", {});
  }
  void TearDown() override {
    clean_cache();  // ends what a failed test kept
  }

  test::ProcessResult clean_cache() const {
    auto e = env(0);
    e.emplace_back("CAPSA_CACHEDIR=" + dir_.path() + "/cache");  // not the cache of the other suites
    return capsa({"cache", "clean", "--force"}, e);
  }

  std::vector<std::string> env(double linger) const {
    return {"CAPSA_SESSION_DIR=" + session_, "CAPSA_KEEP_IMAGE_SECONDS=" + std::to_string(linger),
            "CAPSA_TEST_MARK=" + dir_.path()};
  }

  // What is left of the test's containers: mounts, FUSE servers and capsa processes.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> left = test::mounts_naming(session_);
    for (const auto& process : test::processes_with_environment("CAPSA_TEST_MARK=" + dir_.path()))
      left.push_back(process);
    return left;
  }

  // Waits up to `limit` for nothing to be left; returns what is.
  std::vector<std::string> leftovers_after(std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<std::string> left = leftovers();
    while (!left.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      left = leftovers();
    }
    return left;
  }

  std::string mount_namespace(const std::vector<std::string>& extra_args, double linger) const {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    args.insert(args.end(), {image_, "readlink", "/proc/self/ns/mnt"});
    auto result = capsa(args, env(linger));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.out;
  }

  test::TempDir dir_;
  std::string session_;
  std::string image_;
};

TEST_F(KeptImages, BackToBackContainersShareOneMountNamespace) {
  const std::string first = mount_namespace({}, 30);
  // Kept in between: an equal inode number is the same namespace, not a recycled one.
  EXPECT_FALSE(leftovers().empty()) << "the image was not kept";
  const std::string second = mount_namespace({}, 30);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first, second);
  EXPECT_NE(first, testing::own_namespace("mnt") + "\n");
}

TEST_F(KeptImages, ALingerOfZeroKeepsNothing) {
  ASSERT_FALSE(mount_namespace({}, 0).empty());
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(KeptImages, NothingIsLeftOnceTheLingerHasPassed) {
  auto result = capsa({"exec", image_, "true"}, env(1));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(leftovers().empty()) << "the image was not kept";
  EXPECT_EQ(leftovers_after(std::chrono::seconds(10)), std::vector<std::string>{});
}

TEST_F(KeptImages, AProcessLeftInTheContainerKeepsTheMountUntilItEnds) {
  // The command ends at once; the process it leaves behind runs on for two seconds.
  auto result = capsa({"exec", image_, "sh", "-c", "sleep 2 </dev/null >/dev/null 2>&1 &"}, env(0.5));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  EXPECT_FALSE(test::mounts_naming(session_).empty()) << "the mounts went while a process of the container ran";
  EXPECT_EQ(leftovers_after(std::chrono::seconds(10)), std::vector<std::string>{});
}

TEST_F(KeptImages, ContainersWhoseRootsDifferDoNotShare) {
  const std::string plain = mount_namespace({}, 30);
  EXPECT_NE(plain, mount_namespace({"-B", dir_.path() + ":/mnt"}, 30));
  EXPECT_NE(plain, mount_namespace({"--no-home"}, 30));
  // Never kept: their roots are the container's own.
  EXPECT_NE(plain, mount_namespace({"--writable-tmpfs"}, 30));
  EXPECT_NE(plain, mount_namespace({"--contain"}, 30));
  EXPECT_EQ(plain, mount_namespace({}, 30));
}

TEST_F(KeptImages, TheRanksOfOneJobShareOne) {
  std::vector<std::string> namespaces;
  for (const char* rank : {"0", "1"}) {
    auto e = env(30);
    e.emplace_back(std::string("OMPI_COMM_WORLD_RANK=") + rank);
    e.emplace_back(std::string("CUDA_VISIBLE_DEVICES=") + rank);
    auto result = capsa({"exec", image_, "sh", "-c", "readlink /proc/self/ns/mnt; echo $OMPI_COMM_WORLD_RANK"}, e);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto lines = testing::lines_of(result.out);
    ASSERT_EQ(lines.size(), 2u) << result.out;
    EXPECT_EQ(lines[1], rank) << "each rank keeps its own environment";
    namespaces.push_back(lines[0]);
  }
  EXPECT_EQ(namespaces[0], namespaces[1]);
}

TEST_F(KeptImages, EachContainerHasItsOwnCommandEnvironmentDirectoryAndExitCode) {
  auto first = capsa({"exec", "--pwd", "/etc", image_, "sh", "-c", "echo $GREETING; pwd; exit 3"}, [&] {
    auto e = env(30);
    e.emplace_back("SINGULARITYENV_GREETING=first");
    return e;
  }());
  auto second = capsa({"exec", "--pwd", "/", image_, "sh", "-c", "echo $GREETING; pwd; exit 4"}, [&] {
    auto e = env(30);
    e.emplace_back("SINGULARITYENV_GREETING=second");
    return e;
  }());
  EXPECT_EQ(first.exit_code, 3) << first.err;
  EXPECT_EQ(first.out, "first\n/etc\n");
  EXPECT_EQ(second.exit_code, 4) << second.err;
  EXPECT_EQ(second.out, "second\n/\n");
}

TEST_F(KeptImages, AJoinedContainerHasTheEnvironmentOfAnyOther) {
  // Its image by the caller's path (a symlink keeps its name) and its binds, as launch gives.
  const std::string link = dir_.path() + "/link.sif";
  std::filesystem::create_symlink(image_, link);
  const std::vector<std::string> args = {
      "exec", "-B", dir_.path() + ":/mnt", link, "sh", "-c", "echo $SINGULARITY_CONTAINER; echo $APPTAINER_BIND"};
  const auto mounted = capsa(args, env(0));
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  ASSERT_EQ(capsa({"exec", "-B", dir_.path() + ":/mnt", link, "true"}, env(30)).exit_code, 0);
  EXPECT_FALSE(leftovers().empty()) << "the image was not kept";
  const auto joined = capsa(args, env(30));
  ASSERT_EQ(joined.exit_code, 0) << joined.err;
  EXPECT_EQ(joined.out, mounted.out);
  EXPECT_NE(joined.out.find(link + "\n"), std::string::npos) << joined.out;
}

TEST_F(KeptImages, TheContainerSeesTheHostPidNamespaceAsAnyContainerDoes) {
  auto result = capsa({"exec", image_, "sh", "-c", "echo $$"}, env(30));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_GT(std::stoi(result.out), 1);
  EXPECT_EQ(capsa({"exec", image_, "readlink", "/proc/self/ns/pid"}, env(30)).out,
            testing::own_namespace("pid") + "\n");
}

TEST_F(KeptImages, ContainersStartedAtOnceAllRunAndShareOne) {
  std::set<std::string> namespaces;
  std::vector<test::ProcessResult> results(8);
  std::vector<std::thread> threads;
  threads.reserve(results.size());
  for (auto& result : results)
    threads.emplace_back([&] { result = capsa({"exec", image_, "readlink", "/proc/self/ns/mnt"}, env(30)); });
  for (auto& thread : threads) thread.join();
  for (const auto& result : results) {
    EXPECT_EQ(result.exit_code, 0) << result.err;
    namespaces.insert(result.out);
  }
  EXPECT_EQ(namespaces.size(), 1u);
}

TEST_F(KeptImages, CacheCleanEndsThem) {
  ASSERT_EQ(capsa({"exec", image_, "true"}, env(300)).exit_code, 0);
  ASSERT_FALSE(leftovers().empty()) << "the image was not kept";
  auto clean = clean_cache();
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(leftovers_after(std::chrono::seconds(5)), std::vector<std::string>{});
}

TEST_F(KeptImages, ABadLingerValueIsOneClearError) {
  auto result = capsa({"exec", image_, "true"}, {"CAPSA_KEEP_IMAGE_SECONDS=soon"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("CAPSA_KEEP_IMAGE_SECONDS=soon: not a number of seconds"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace capsa::runtime
