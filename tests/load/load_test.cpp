// Load, test-sized (bench/load.sh runs the full size and reports figures): 200 `capsa
// exec` of one image in waves of 32, many containers reading one SIF at once, concurrent
// pulls of the same and of different images into one cache. Nothing may fail and nothing
// may leak: no mount, loop device or process after the last container, no descriptor a
// container did not ask for, and a bounded peak RSS per capsa process.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include "registry/testbed.hpp"
#include "support/background.hpp"
#include "support/cache_check.hpp"
#include "support/leaks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::load {
namespace {

namespace fs = std::filesystem;
using test::joined;

constexpr int kExecs = 200;
constexpr int kWave = 32;
// Generous: capsa itself needs a few MiB; this catches reading an image into memory.
constexpr long kPeakRssBoundKib = 64 << 10;

// What a finished process says about itself, for a failure message.
std::string described(const test::ProcessResult& done) {
  return "exit " + std::to_string(done.exit_code) + " signal " + std::to_string(done.signal) + ": " + done.out + done.err;
}

class Load : public ::testing::Test, protected test::PrivateContainers {
 protected:
  Load() : PrivateContainers("load.sif", "CAPSA_LOAD_MARK") { fs::create_directories(logs); }
  const std::string logs = work / "logs";

  std::vector<std::string> exec_argv(std::vector<std::string> command) const {
    std::vector<std::string> argv = {"env", "CAPSA_SESSION_DIR=" + session, marker, test::capsa_binary(), "exec",
                                     image};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }
  // Started with stdout and stderr in files under logs/ named after `name`.
  void start(std::deque<test::Background>& started, const std::vector<std::string>& argv, const std::string& name) {
    started.emplace_back(argv, logs + "/" + name + ".err", /*own_group=*/false, logs + "/" + name + ".out");
  }
};

TEST_F(Load, TwoHundredExecsInWavesOf32AllSucceedAndLeaveNothing) {
  int failures = 0;
  long peak_rss = 0;
  std::string first_failure;
  for (int wave_start = 0; wave_start < kExecs; wave_start += kWave) {
    std::deque<test::Background> wave;
    for (int i = wave_start; i < std::min(kExecs, wave_start + kWave); ++i) {
      const std::string n = std::to_string(i);
      start(wave, exec_argv({"echo", "container " + n}), n);
    }
    for (std::size_t k = 0; k < wave.size(); ++k) {
      test::ProcessResult done = wave[k].wait();
      peak_rss = std::max(peak_rss, wave[k].max_rss_kib());
      const std::string expected = "container " + std::to_string(wave_start + static_cast<int>(k)) + "\n";
      if (done.exit_code != 0 || done.out != expected) {
        if (failures++ == 0) first_failure = described(done);
      }
    }
  }
  EXPECT_EQ(failures, 0) << "first: " << first_failure;
  EXPECT_GT(peak_rss, 0);
  EXPECT_LT(peak_rss, kPeakRssBoundKib) << "peak RSS of one capsa exec, KiB";
  expect_nothing_left();
}

// A container that runs a while holds what it was given (stdin, stdout, stderr here)
// and nothing capsa opened to set it up: no image, loop, FUSE, session or lock fd.
TEST_F(Load, ALongRunningContainerHoldsNoDescriptorItDidNotInherit) {
  fs::create_directories(work / "shared");
  test::Background container({"env", "CAPSA_SESSION_DIR=" + session, marker, test::capsa_binary(), "exec", "-B",
                              work / "shared" + ":/w", image, "sh", "-c", "touch /w/ready; exec sleep 300"},
                             work / "container.err");
  ASSERT_TRUE(test::eventually([&] { return fs::exists(work / "shared/ready") || container.finished(); }, 60) &&
              fs::exists(work / "shared/ready"))
      << test::read_file(work / "container.err");
  std::vector<std::string> fds = test::open_descriptors(container.pid());
  std::vector<std::string> unexpected;
  for (const auto& fd : fds)
    if (!fd.starts_with("0 -> ") && !fd.starts_with("1 -> ") && !fd.starts_with("2 -> ")) unexpected.push_back(fd);
  EXPECT_EQ(fds.size(), 3u + unexpected.size());
  EXPECT_EQ(joined(unexpected), "") << "descriptors the container did not inherit from its caller";
  container.signal(SIGKILL);
  container.wait();
  expect_nothing_left();
}

// 32 containers read every file of one SIF at once: all read the same bytes.
TEST_F(Load, ManyContainersReadingOneSifAllSeeTheSameBytes) {
  const std::vector<std::string> read_all = {"sh", "-c", "find / -xdev -type f 2>/dev/null | sort | xargs cat | md5sum"};
  auto reference = test::run_process(exec_argv(read_all), "", 120);
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  ASSERT_EQ(reference.out.size(), 36u) << reference.out;  // "<32 hex>  -\n"
  std::deque<test::Background> readers;
  for (int i = 0; i < kWave; ++i) start(readers, exec_argv(read_all), "r" + std::to_string(i));
  int differing = 0;
  std::string first;
  for (auto& reader : readers) {
    test::ProcessResult done = reader.wait();
    if (done.exit_code != 0 || done.out != reference.out) {
      if (differing++ == 0) first = described(done);
    }
  }
  EXPECT_EQ(differing, 0) << "first: " << first;
  expect_nothing_left();
}

// 8 pulls of one image and 2 each of two others, into one cache at once: all complete,
// each blob is downloaded once, the cache holds one SIF per image and is consistent.
TEST_F(Load, ConcurrentPullsOfTheSameAndOfDifferentImagesIntoOneCache) {
  test::FaultProxy proxy(test::test_registry().plain);  // no faults: it counts the requests
  proxy.configure({});
  const std::string cache = work / "cache";
  std::vector<std::string> repos;
  std::deque<test::Background> pulls;
  for (const std::string repo : {"public/busybox:1.0", "public/layers:latest", "public/zstd:latest"}) {
    const int copies = repo == "public/busybox:1.0" ? 8 : 2;
    for (int i = 0; i < copies; ++i) {
      const std::string id = std::to_string(pulls.size());
      repos.push_back(repo);
      start(pulls,
            {"env", "CAPSA_CACHEDIR=" + cache, test::capsa_binary(), "pull", "-q", "--nohttps",
             work / ("pull" + id + ".sif"), "docker://" + proxy.front() + "/" + repo},
            "p" + id);
    }
  }
  int failed = 0;
  std::string first_failure;
  for (std::size_t k = 0; k < pulls.size(); ++k) {
    test::ProcessResult done = pulls[k].wait();
    if (done.exit_code != 0) {
      if (failed++ == 0) first_failure = repos[k] + ": " + done.err;
    }
  }
  EXPECT_EQ(failed, 0) << first_failure;
  std::map<std::string, int> gets;
  for (const auto& request : proxy.requests()) {
    std::string path = request["path"];
    if (request["method"] == "GET" && path.find("/blobs/") != std::string::npos) ++gets[path.substr(path.rfind(':') + 1)];
  }
  for (const auto& [blob, count] : gets) EXPECT_EQ(count, 1) << blob << " downloaded " << count << " times";
  EXPECT_FALSE(gets.empty());
  test::CacheCheck check = test::check_cache(cache);
  EXPECT_EQ(joined(check.problems), "");
  EXPECT_EQ(check.sifs, 3);
  EXPECT_TRUE(check.partials.empty()) << joined(check.partials);
  EXPECT_TRUE(check.stale_temporaries.empty()) << joined(check.stale_temporaries);
}

// `cache clean` while containers run from the cache (`exec docker://`): their image is
// kept (with a warning) until the last of them ends, then removed.
TEST_F(Load, ACacheCleanWhileContainersRunKeepsTheirImage) {
  const std::string cache = work / "cache";
  fs::create_directories(work / "shared");
  const std::vector<std::string> env = {"env", "CAPSA_CACHEDIR=" + cache, "APPTAINER_NOHTTPS=1",
                                        "CAPSA_SESSION_DIR=" + session, marker};
  auto argv = env;
  for (const std::string& arg : {test::capsa_binary(), std::string("exec"), std::string("-B"),
                                 work / "shared" + ":/w", "docker://" + test::test_registry().plain + "/public/busybox:1.0",
                                 std::string("sh"), std::string("-c"),
                                 std::string("sleep 300 & touch /w/ready; exec sleep 300")})
    argv.push_back(arg);
  test::Background container(argv, work / "container.err", /*own_group=*/true);
  ASSERT_TRUE(test::eventually([&] { return fs::exists(work / "shared/ready") || container.finished(); }, 120) &&
              fs::exists(work / "shared/ready"))
      << test::read_file(work / "container.err");
  // The containers run the cache's SIF of the image: that is what must not stay in use.
  std::vector<std::string> cached_sifs;
  for (const auto& entry : fs::recursive_directory_iterator(cache + "/sif"))
    if (entry.is_regular_file() && entry.path().extension() == ".sif") cached_sifs.push_back(entry.path());
  ASSERT_EQ(cached_sifs.size(), 1u) << joined(cached_sifs);
  const std::string cached_sif = cached_sifs.front();
  if (::geteuid() == 0)
    EXPECT_FALSE(test::loop_devices_backed_by(cached_sif).empty()) << "the leak check sees the running containers";
  auto clean_argv = env;
  for (const char* arg : {"cache", "clean", "--force"}) clean_argv.push_back(arg);
  clean_argv.insert(clean_argv.begin() + static_cast<long>(env.size()), test::capsa_binary());
  auto cleaned = test::run_process(clean_argv, "", 60);
  EXPECT_EQ(cleaned.exit_code, 0) << cleaned.err;
  EXPECT_NE(cleaned.err.find("WARNING: kept sif"), std::string::npos) << cleaned.out << cleaned.err;
  EXPECT_EQ(test::check_cache(cache).sifs, 1) << "the running containers' image is still there";

  container.signal_group(SIGKILL);
  container.wait();
  expect_nothing_left(cached_sif);
  auto again = test::run_process(clean_argv, "", 60);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(test::check_cache(cache).sifs, 0) << "once they ended, clean removes it: " << again.out << again.err;
}

}  // namespace
}  // namespace capsa::load
