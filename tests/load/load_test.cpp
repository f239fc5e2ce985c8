// Load, test-sized (bench/load.sh runs the full size and reports figures): 200 `capsa
// exec` of one image in waves of 32, many containers reading one SIF at once, concurrent
// pulls of the same and of different images into one cache. Nothing may fail and nothing
// may leak: no mount, loop device or process after the last container, no descriptor a
// container did not ask for, and a bounded peak RSS per capsa process.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "registry_client/testbed.hpp"
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

// A process started with stdout and stderr in files; reaped with its resource usage.
struct Started {
  pid_t pid = -1;
  std::string out_file, err_file;
};

Started start(const std::vector<std::string>& argv, const std::string& out_file, const std::string& err_file) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(null_fd, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return {pid, out_file, err_file};
}

struct Finished {
  int status = 0;
  long max_rss_kib = 0;
  std::string out, err;
};

Finished finish(const Started& started) {
  Finished done;
  rusage usage{};
  while (::wait4(started.pid, &done.status, 0, &usage) < 0 && errno == EINTR) {
  }
  done.max_rss_kib = usage.ru_maxrss;
  done.out = test::read_file(started.out_file);
  done.err = test::read_file(started.err_file);
  return done;
}

class Load : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(session);
    fs::create_directories(logs);
    ASSERT_EQ(test::run_process({"cp", test::sif_fixture("real/busybox_amd64.sif"), image}).exit_code, 0);
  }
  test::TempDir work;
  const std::string image = work / "load.sif";
  const std::string session = work / "session";
  const std::string logs = work / "logs";
  const std::string marker = "CAPSA_LOAD_MARK=" + work.path();

  std::vector<std::string> exec_argv(std::vector<std::string> command) const {
    std::vector<std::string> argv = {"env", "CAPSA_SESSION_DIR=" + session, marker, test::capsa_binary(), "exec",
                                     image};
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }
  // What a live container of `image_file` holds (the test's own copy unless it runs
  // another image, such as the cache's SIF of a docker:// image).
  std::vector<std::string> leftovers(const std::string& image_file) const {
    std::vector<std::string> found = test::mounts_naming(session);
    for (const auto& mount : test::mounts_naming(image_file)) found.push_back(mount);
    for (const auto& loop : test::loop_devices_backed_by(image_file)) found.push_back("loop device " + loop);
    for (const auto& process : test::processes_with_argument(image_file)) found.push_back("process " + process);
    for (const auto& process : test::processes_with_environment(marker)) found.push_back("process " + process);
    return found;
  }
  void expect_nothing_left(const std::string& image_file) const {
    EXPECT_TRUE(test::eventually([&] { return leftovers(image_file).empty(); }, 30)) << joined(leftovers(image_file));
  }
  void expect_nothing_left() const { expect_nothing_left(image); }
};

TEST_F(Load, TwoHundredExecsInWavesOf32AllSucceedAndLeaveNothing) {
  int failures = 0;
  long peak_rss = 0;
  std::string first_failure;
  for (int wave_start = 0; wave_start < kExecs; wave_start += kWave) {
    std::vector<Started> wave;
    for (int i = wave_start; i < std::min(kExecs, wave_start + kWave); ++i) {
      const std::string n = std::to_string(i);
      wave.push_back(start(exec_argv({"echo", "container " + n}), logs + "/" + n + ".out", logs + "/" + n + ".err"));
    }
    for (std::size_t k = 0; k < wave.size(); ++k) {
      Finished done = finish(wave[k]);
      peak_rss = std::max(peak_rss, done.max_rss_kib);
      const std::string expected = "container " + std::to_string(wave_start + static_cast<int>(k)) + "\n";
      if (!WIFEXITED(done.status) || WEXITSTATUS(done.status) != 0 || done.out != expected) {
        if (failures++ == 0) first_failure = "status " + std::to_string(done.status) + ": " + done.out + done.err;
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
  std::vector<Started> readers;
  for (int i = 0; i < kWave; ++i) {
    const std::string n = std::to_string(i);
    readers.push_back(start(exec_argv(read_all), logs + "/r" + n + ".out", logs + "/r" + n + ".err"));
  }
  int differing = 0;
  std::string first;
  for (const auto& reader : readers) {
    Finished done = finish(reader);
    if (!WIFEXITED(done.status) || WEXITSTATUS(done.status) != 0 || done.out != reference.out) {
      if (differing++ == 0) first = "status " + std::to_string(done.status) + ": " + done.out + done.err;
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
  std::vector<std::pair<std::string, Started>> pulls;
  int n = 0;
  for (const std::string repo : {"public/busybox:1.0", "public/layers:latest", "public/zstd:latest"}) {
    const int copies = repo == "public/busybox:1.0" ? 8 : 2;
    for (int i = 0; i < copies; ++i, ++n) {
      const std::string id = std::to_string(n);
      pulls.emplace_back(repo, start({"env", "CAPSA_CACHEDIR=" + cache, test::capsa_binary(), "pull", "-q",
                                      "--nohttps", work / ("pull" + id + ".sif"), "docker://" + proxy.front() + "/" + repo},
                                     logs + "/p" + id + ".out", logs + "/p" + id + ".err"));
    }
  }
  int failed = 0;
  std::string first_failure;
  for (const auto& [repo, started] : pulls) {
    Finished done = finish(started);
    if (!WIFEXITED(done.status) || WEXITSTATUS(done.status) != 0) {
      if (failed++ == 0) first_failure = repo + ": " + done.err;
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
