// `capsa pull` under faults, end to end: the real test registry behind
// tests/registry/fault_proxy.py (throttled, stalled, cut, failing, corrupting), the
// capsa binary killed or interrupted in the middle, and a cache on a full file system.
// Each test asserts what is left behind (output, temporaries, cache) and that a re-run
// completes, downloading only what is missing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "registry/testbed.hpp"
#include "sif/image.hpp"
#include "support/background.hpp"
#include "support/cache_check.hpp"
#include "support/leaks.hpp"
#include "support/namespace.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"
#include "support/unprivileged.hpp"

namespace capsa::pull {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;
using test::run_process;
using test::TempDir;

using test::Background;
using test::eventually;

// name -> size of the files in `dir` (not recursive); empty when it does not exist.
std::map<std::string, std::uintmax_t> files_in(const std::string& dir) {
  std::map<std::string, std::uintmax_t> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file()) files[entry.path().filename().string()] = entry.file_size();
  return files;
}

std::map<std::string, std::uintmax_t> with_suffix(const std::map<std::string, std::uintmax_t>& files,
                                                  const std::string& suffix) {
  std::map<std::string, std::uintmax_t> matching;
  for (const auto& [name, size] : files)
    if (name.ends_with(suffix)) matching[name] = size;
  return matching;
}

int count_lines_with(const std::string& text, const std::string& needle) {
  int count = 0;
  std::size_t line_start = 0;
  while (line_start < text.size()) {
    std::size_t end = text.find('\n', line_start);
    if (end == std::string::npos) end = text.size();
    if (text.substr(line_start, end - line_start).find(needle) != std::string::npos) ++count;
    line_start = end + 1;
  }
  return count;
}

constexpr const char* kDebian = "public/debian:bookworm";

class PullFaults : public ::testing::Test {
 protected:
  TempDir work;
  std::string cache = work / "cache";
  std::string out = work / "out.sif";
  test::FaultProxy proxy{test::test_registry().plain};  // a fresh proxy (and port) per test

  std::string blobs() const { return cache + "/blobs/sha256"; }
  std::string image(const std::string& repo) const { return "docker://" + proxy.front() + "/" + repo; }
  std::vector<std::string> capsa_argv(std::vector<std::string> args, std::vector<std::string> env = {}) const {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + cache};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(test::capsa_binary());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  ProcessResult pull(const std::string& repo, std::vector<std::string> env = {}, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"pull", "-q", "--nohttps"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(out);
    args.push_back(image(repo));
    return run_process(capsa_argv(args, env), "", 300);
  }
  // Blob GETs the proxy saw since its last configure(): path -> Range headers ("" for none).
  std::multimap<std::string, std::string> blob_gets() const {
    std::multimap<std::string, std::string> gets;
    for (const auto& request : proxy.requests()) {
      std::string path = request["path"];
      if (request["method"] == "GET" && path.find("/blobs/sha256:") != std::string::npos)
        gets.emplace(path.substr(path.rfind(':') + 1), request["range"].is_null() ? "" : std::string(request["range"]));
    }
    return gets;
  }
  // AtomicFile temporaries beside the output.
  std::vector<std::string> temporaries_beside_output() const {
    std::vector<std::string> found;
    for (const auto& [name, size] : files_in(work.path()))
      if (name.starts_with("out.sif.")) found.push_back(name);
    return found;
  }
  std::uintmax_t largest_partial_blob() const {
    std::uintmax_t largest = 0;
    for (const auto& [name, size] : with_suffix(files_in(blobs()), ".partial")) largest = std::max(largest, size);
    return largest;
  }
  // Everything under the cache's tmp/ but lock files: path -> size (0 for directories).
  std::map<std::string, std::uintmax_t> scratch_files() const {
    std::map<std::string, std::uintmax_t> scratch;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(cache + "/tmp", ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      std::string name = it->path().string();
      std::error_code size_ec;
      if (!name.ends_with(".lock")) scratch[name] = it->is_regular_file(size_ec) ? it->file_size(size_ec) : 0;
    }
    return scratch;
  }
  // The squashfs is written inside the unfinished SIF in the conversion's scratch
  // directory: past its ~33 KiB of header and metadata objects, image data is flowing.
  bool conversion_running() const {
    for (const auto& [name, size] : scratch_files())
      if (name.find(".convert/") != std::string::npos && size > (64u << 10)) return true;
    return false;
  }
  // A pull of the cached debian blobs whose conversion is under way: xz makes the
  // conversion slow enough to be hit by a signal.
  std::unique_ptr<Background> start_slow_conversion() {
    EXPECT_EQ(pull(kDebian).exit_code, 0);
    fs::remove(out);
    fs::remove_all(cache + "/sif");
    auto converting = std::make_unique<Background>(
        capsa_argv({"pull", "-q", "--nohttps", "--compression", "xz", out, image(kDebian)}), work / "converting.err");
    EXPECT_TRUE(eventually([&] { return conversion_running(); })) << "the conversion never started";
    return converting;
  }
  void expect_no_output() const {
    EXPECT_FALSE(fs::exists(out)) << "no partial SIF at the output path";
    EXPECT_EQ(temporaries_beside_output(), std::vector<std::string>{});
  }
  void expect_valid_output() const {
    ASSERT_TRUE(fs::exists(out));
    EXPECT_NO_THROW(sif::Image::open(out));
  }
  // The cache after a fault (tests/support/cache_check.hpp): every entry whole and
  // verified, nothing but partials and locks beside them, no lock held.
  void expect_consistent_cache() const {
    test::CacheCheck check = test::check_cache(cache);
    EXPECT_EQ(test::joined(check.problems), "") << "the cache is consistent";
  }
  // Blobs complete in the cache (the names of the files that are neither partial nor lock).
  std::set<std::string> complete_blobs() const {
    std::set<std::string> complete;
    for (const auto& [name, size] : files_in(blobs()))
      if (!name.ends_with(".partial") && !name.ends_with(".lock")) complete.insert(name);
    return complete;
  }
  // Descriptors `pid` holds open on files beside the output: the output's temporary
  // (named, or an O_TMPFILE shown as "DIR/#INODE (deleted)").
  bool writing_beside_output(pid_t pid) const {
    for (const auto& fd : test::open_descriptors(pid)) {
      std::string target = fd.substr(fd.find(" -> ") + 4);
      if (target.starts_with(work.path() + "/") && !target.starts_with(cache + "/") && !target.ends_with(".err"))
        return true;
    }
    return false;
  }
};

constexpr const char* kBusybox = "public/busybox:1.0";

TEST_F(PullFaults, KillNineMidBlobLeavesNoOutputAndTheRerunFetchesOnlyTheRest) {
  proxy.configure({{"throttle", {{"bytes_per_second", 2 << 20}}}});
  Background first(capsa_argv({"pull", "-q", "--nohttps", out, image(kDebian)}), work / "first.err");
  ASSERT_TRUE(eventually([&] { return largest_partial_blob() > (512u << 10); })) << "no blob download started";
  first.signal(SIGKILL);
  EXPECT_EQ(first.wait().signal, SIGKILL);
  expect_no_output();
  expect_consistent_cache();

  const auto after_kill = files_in(blobs());
  const auto partials = with_suffix(after_kill, ".partial");
  ASSERT_FALSE(partials.empty());
  proxy.configure({});
  auto second = pull(kDebian);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  expect_valid_output();

  // A partial that already held the whole blob is only verified: no request at all.
  const auto gets = blob_gets();
  int resumed = 0;
  for (const auto& [name, size] : partials) {
    std::string hex = name.substr(0, name.size() - std::string(".partial").size());
    EXPECT_LE(gets.count(hex), 1u) << hex << " fetched once more";
    if (gets.count(hex) == 0) continue;
    EXPECT_EQ(gets.find(hex)->second, "bytes=" + std::to_string(size) + "-") << "resumed where the kill left it";
    ++resumed;
  }
  EXPECT_GE(resumed, 1) << "the blob being downloaded at the kill is resumed";
  expect_consistent_cache();
  for (const auto& [name, size] : after_kill) {
    if (!name.ends_with(".partial") && !name.ends_with(".lock")) {
      EXPECT_EQ(gets.count(name), 0u) << name << " was complete and is not downloaded again";
    }
  }
}

TEST_F(PullFaults, SigintMidBlobExits130AndLeavesNothingButResumableBlobs) {
  proxy.configure({{"throttle", {{"bytes_per_second", 2 << 20}}}});
  Background first(capsa_argv({"pull", "--nohttps", out, image(kDebian)}), work / "first.err");
  ASSERT_TRUE(eventually([&] { return largest_partial_blob() > (512u << 10); })) << "no blob download started";
  first.signal(SIGINT);
  ProcessResult interrupted = first.wait();
  EXPECT_EQ(interrupted.exit_code, 130) << interrupted.err;
  EXPECT_NE(interrupted.err.find("interrupted by SIGINT"), std::string::npos) << interrupted.err;
  expect_no_output();
  EXPECT_EQ(scratch_files(), (std::map<std::string, std::uintmax_t>{})) << "the cache's scratch files were removed";
  EXPECT_EQ(with_suffix(files_in(cache + "/sif"), ".partial"), (std::map<std::string, std::uintmax_t>{}));
  EXPECT_FALSE(with_suffix(files_in(blobs()), ".partial").empty()) << "partial blobs are kept for a resume";
  expect_consistent_cache();

  proxy.configure({});
  auto second = pull(kDebian);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  expect_valid_output();
  bool resumed = false;
  for (const auto& [hex, range] : blob_gets()) resumed = resumed || !range.empty();
  EXPECT_TRUE(resumed) << "the re-run resumes with Range";
}

TEST_F(PullFaults, SigintWhileWaitingForAnotherPullStopsOnlyTheWaiter) {
  proxy.configure({{"throttle", {{"bytes_per_second", 2 << 20}}}});
  Background downloader(capsa_argv({"pull", "-q", "--nohttps", out, image(kDebian)}), work / "downloader.err");
  ASSERT_TRUE(eventually([&] { return largest_partial_blob() > (256u << 10); })) << "no blob download started";
  const std::string second_out = work / "second.sif";
  Background waiter(capsa_argv({"pull", "--nohttps", second_out, image(kDebian)}), work / "waiter.err");
  auto waiter_says = [&] { return fs::exists(work / "waiter.err") ? test::read_file(work / "waiter.err") : ""; };
  ASSERT_TRUE(eventually([&] { return waiter_says().find("waiting for") != std::string::npos; })) << waiter_says();
  waiter.signal(SIGINT);
  ProcessResult stopped = waiter.wait();
  EXPECT_EQ(stopped.exit_code, 130) << stopped.err;
  EXPECT_FALSE(fs::exists(second_out));
  const std::uintmax_t before = largest_partial_blob();
  EXPECT_TRUE(eventually([&] { return largest_partial_blob() > before; }, 10)) << "the downloader carries on";
  downloader.signal(SIGINT);
  EXPECT_EQ(downloader.wait().exit_code, 130);
  expect_no_output();
}

// `exec docker://` pulls in a child process; killing only the parent must not leave it running.
TEST_F(PullFaults, ExecDockerKilledMidPullLeavesNoProcessAndNoScratch) {
  proxy.configure({{"throttle", {{"bytes_per_second", 2 << 20}}}});
  Background exec(capsa_argv({"exec", image(kDebian), "true"}, {"APPTAINER_NOHTTPS=1"}), work / "exec.err");
  ASSERT_TRUE(eventually([&] { return largest_partial_blob() > (256u << 10); })) << "no blob download started";
  exec.signal(SIGTERM);
  EXPECT_EQ(exec.wait().signal, SIGTERM);
  EXPECT_TRUE(eventually([&] { return test::processes_with_environment("CAPSA_CACHEDIR=" + cache).empty(); }, 5))
      << "the pulling child outlived its parent";
  EXPECT_EQ(scratch_files(), (std::map<std::string, std::uintmax_t>{}));
  EXPECT_FALSE(with_suffix(files_in(blobs()), ".partial").empty()) << "partial blobs are kept for a resume";
  expect_consistent_cache();
}

TEST_F(PullFaults, SigtermDuringConversionRemovesTheTemporarySquashfs) {
  auto converting_ptr = start_slow_conversion();
  Background& converting = *converting_ptr;
  converting.signal(SIGTERM);
  ProcessResult stopped = converting.wait();
  EXPECT_EQ(stopped.exit_code, 128 + SIGTERM) << stopped.err;
  expect_no_output();
  EXPECT_EQ(scratch_files(), (std::map<std::string, std::uintmax_t>{}));
  expect_consistent_cache();
}

TEST_F(PullFaults, KillNineDuringConversionThenTheRerunConvertsWithoutDownloading) {
  auto converting_ptr = start_slow_conversion();
  Background& converting = *converting_ptr;
  converting.signal(SIGKILL);
  EXPECT_EQ(converting.wait().signal, SIGKILL);
  expect_no_output();
  EXPECT_TRUE(with_suffix(files_in(cache + "/sif"), ".sif").empty()) << "no SIF entry was published";
  expect_consistent_cache();

  proxy.configure({});
  auto rerun = pull(kDebian);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_valid_output();
  EXPECT_TRUE(blob_gets().empty()) << "every blob was already in the cache";
  EXPECT_EQ(with_suffix(files_in(cache + "/sif"), ".sif").size(), 1u);
  EXPECT_TRUE(with_suffix(files_in(cache + "/sif"), ".partial").empty());
  EXPECT_EQ(scratch_files(), (std::map<std::string, std::uintmax_t>{})) << "the killed run's squashfs was swept";
  expect_consistent_cache();
}

TEST_F(PullFaults, AStalledRegistryIsAbandonedAndTheBlobResumed) {
  // count 2: the config blob (smaller than 100000 bytes) may take one stall and still arrive whole.
  proxy.configure({{"stall", {{"after_bytes", 100000}, {"count", 2}, {"seconds", 30}}}});
  auto result = pull(kBusybox, {"CAPSA_REGISTRY_STALL_SECONDS=1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_valid_output();
  bool resumed = false;
  for (const auto& [hex, range] : blob_gets()) resumed = resumed || range == "bytes=100000-";
  EXPECT_TRUE(resumed) << "the stalled blob continued from its 100000 bytes";
}

TEST_F(PullFaults, ARegistryThatComesBackAfterCuttingTheConnectionServesThePull) {
  proxy.configure({{"truncate", {{"after_bytes", 0}, {"count", 2}}}});
  auto result = pull(kBusybox);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_valid_output();
}

TEST_F(PullFaults, ARegistryThatKeepsCuttingTheConnectionGetsOneClearErrorLine) {
  proxy.configure({{"truncate", {{"after_bytes", 0}, {"count", 1000}}}});
  auto result = pull(kBusybox);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(count_lines_with(result.err, "capsa: error"), 1) << result.err;
  EXPECT_NE(result.err.find("gave up after"), std::string::npos) << result.err;
  expect_no_output();
}

int answered_with(const std::vector<nlohmann::json>& requests, int status) {
  int count = 0;
  for (const auto& request : requests) count += request["status"] == status;
  return count;
}

// fault_proxy.py counts a "fail" on every request, also those its path filter spares: the
// manifest HEAD and GET use the first two, so count 5 fails three blob requests.
TEST_F(PullFaults, Intermittent500And429AreRetried) {
  proxy.configure({{"fail", {{"status", 500}, {"count", 5}, {"path", "/blobs/"}}}});
  auto first = pull(kBusybox);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  expect_valid_output();
  EXPECT_EQ(answered_with(proxy.requests(), 500), 3);

  fs::remove(out);
  fs::remove_all(cache);
  proxy.configure({{"fail", {{"status", 429}, {"count", 4}, {"retry_after", "1"}, {"path", "/blobs/"}}}});
  auto second = pull(kBusybox);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  expect_valid_output();
  EXPECT_EQ(answered_with(proxy.requests(), 429), 2);
}

TEST_F(PullFaults, ACorruptBlobIsRetriedOnceThenRefusedAndNotCached) {
  proxy.configure({{"corrupt", {{"count", 1000}}}});
  auto result = pull(kBusybox);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(count_lines_with(result.err, "capsa: error"), 1) << result.err;
  std::size_t at = result.err.find("blob sha256:");
  ASSERT_NE(at, std::string::npos) << result.err;
  EXPECT_NE(result.err.find("does not match its digest"), std::string::npos) << result.err;
  std::string hex = result.err.substr(at + 12, 64);
  EXPECT_EQ(blob_gets().count(hex), 2u) << "downloaded twice, then refused";
  EXPECT_FALSE(fs::exists(blobs() + "/" + hex));
  EXPECT_FALSE(fs::exists(blobs() + "/" + hex + ".partial"));
  expect_no_output();
  expect_consistent_cache();
}

// The last step of a pull copies the cached SIF to the output. SIGKILL in the middle of
// that copy must leave neither a partial SIF nor a temporary beside it: no later run
// would know to remove one.
TEST_F(PullFaults, KillNineWhileWritingTheOutputLeavesNoPartialSif) {
  ASSERT_EQ(pull(kDebian).exit_code, 0);
  const std::uintmax_t size = fs::file_size(out);
  fs::remove(out);
  bool caught = false;
  for (int attempt = 0; attempt < 30 && !caught; ++attempt) {
    Background publishing(capsa_argv({"pull", "-q", "--nohttps", out, image(kDebian)}), work / "publishing.err");
    while (!publishing.finished()) {
      if (!writing_beside_output(publishing.pid())) continue;  // busy: the copy lasts milliseconds
      publishing.signal(SIGKILL);
      break;
    }
    const bool killed = publishing.wait().signal == SIGKILL;
    EXPECT_EQ(temporaries_beside_output(), std::vector<std::string>{}) << "attempt " << attempt;
    if (fs::exists(out)) {
      // The kill came after the rename: then the output is whole.
      EXPECT_EQ(fs::file_size(out), size);
      fs::remove(out);
      continue;
    }
    caught = killed;
  }
  ASSERT_TRUE(caught) << "never caught the copy of " << size << " bytes in progress";
  expect_no_output();
  expect_consistent_cache();

  proxy.configure({});
  auto rerun = pull(kDebian);
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_valid_output();
  EXPECT_EQ(fs::file_size(out), size);
  EXPECT_TRUE(blob_gets().empty()) << "the cached SIF is copied again, nothing downloaded";
}

// SIGKILL at a growing delay, run after run, until one run completes: the kills land
// before the manifest, in the middle of the layer, while converting and while writing the
// output. After every kill the cache is consistent and no output exists, and no run
// downloads a blob that an earlier run completed.
TEST_F(PullFaults, KillNineAtGrowingMomentsNeverBreaksTheCacheAndEachRunFetchesOnlyWhatIsMissing) {
  int killed = 0;
  bool completed = false;
  double delay_ms = 50;
  for (int run = 0; run < 30 && !completed; ++run, delay_ms *= 1.4) {
    const std::set<std::string> complete_before = complete_blobs();
    proxy.configure({{"throttle", {{"bytes_per_second", 384 << 10}}}});
    Background puller(capsa_argv({"pull", "-q", "--nohttps", out, image(kBusybox)}), work / "run.err");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<long>(delay_ms * 1000));
    while (std::chrono::steady_clock::now() < deadline && !puller.finished())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (!puller.finished()) puller.signal(SIGKILL);
    // A run may end on its own between the look and the kill: then it is the completed one.
    ProcessResult result = puller.wait();
    if (result.signal == 0) {
      ASSERT_EQ(result.exit_code, 0) << result.err;
      completed = true;
      expect_valid_output();
    } else {
      EXPECT_EQ(result.signal, SIGKILL);
      ++killed;
      expect_no_output();
    }
    expect_consistent_cache();
    for (const auto& [hex, range] : blob_gets())
      EXPECT_EQ(complete_before.count(hex), 0u) << "run " << run << " downloaded the complete blob " << hex << " again";
  }
  EXPECT_TRUE(completed);
  EXPECT_GE(killed, 4) << "the kills should spread over the stages of the pull";
}

// One small tmpfs holds the cache and the output directory and is full: one clear error
// that names the path, no output, a consistent cache with no SIF or squashfs left that
// `cache list` reads; after freeing space the same command completes. (A private mount
// namespace; unprivileged, a user namespace. A remount to grow the tmpfs is refused
// inside a user namespace: space is made by removing a filler file.)
TEST_F(PullFaults, AFullDiskHoldingCacheAndOutputLeavesAConsistentCacheAndTheRerunCompletes) {
  const std::string small_fs = work / "small-fs";
  fs::create_directories(small_fs);
  const std::string fs_cache = small_fs + "/cache", fs_out = small_fs + "/out.sif";
  auto capsa_on_small_fs = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + fs_cache, test::capsa_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, "", 300);
  };
  int status = test::in_private_mount_namespace([&] {
    if (::mount("tmpfs", small_fs.c_str(), "tmpfs", 0, "size=8m") != 0) return false;
    {
      std::ofstream filler(small_fs + "/filler", std::ios::binary);
      std::string chunk(64 << 10, '\0');
      for (int i = 0; i < (8 << 20) / (64 << 10) - 1; ++i) filler << chunk;
    }
    test::ChildChecks check;
    auto first = capsa_on_small_fs({"pull", "-q", "--nohttps", fs_out, image(kBusybox)});
    check.expect(first.exit_code == 1, "the first pull fails: " + first.err);
    check.expect(count_lines_with(first.err, "capsa: error") == 1, "one error line: " + first.err);
    check.expect(first.err.find("No space left on device") != std::string::npos, "says why: " + first.err);
    check.expect(first.err.find(small_fs + "/") != std::string::npos, "names the path: " + first.err);
    check.expect(!fs::exists(fs_out), "no output");
    for (const auto& [name, size] : files_in(small_fs))
      check.expect(name == "filler", "nothing beside the output: " + name);
    test::CacheCheck after_failure = test::check_cache(fs_cache);
    check.expect(after_failure.problems.empty(), "consistent cache: " + test::joined(after_failure.problems));
    check.expect(after_failure.sifs == 0, "no SIF in the cache");
    for (const auto& entry : fs::recursive_directory_iterator(fs_cache)) {
      const std::string name = entry.path().filename().string();
      const bool image_file = name.find(".sif") != std::string::npos || name.find(".squashfs") != std::string::npos;
      check.expect(!image_file || name.ends_with(".lock"), "no partial SIF or squashfs in the cache: " + name);
    }
    auto list = capsa_on_small_fs({"cache", "list"});
    check.expect(list.exit_code == 0, "cache list reads it: " + list.err);

    fs::remove(small_fs + "/filler");
    auto second = capsa_on_small_fs({"pull", "-q", "--nohttps", fs_out, image(kBusybox)});
    check.expect(second.exit_code == 0, "the re-run completes: " + second.err);
    try {
      sif::Image::open(fs_out);
    } catch (const std::exception& e) {
      check.expect(false, std::string("the output is a SIF: ") + e.what());
    }
    test::CacheCheck after_rerun = test::check_cache(fs_cache);
    check.expect(after_rerun.problems.empty() && after_rerun.sifs == 1 && after_rerun.stale_temporaries.empty(),
                 "one SIF, nothing stale: " + test::joined(after_rerun.problems) +
                     test::joined(after_rerun.stale_temporaries));
    return check.report();
  });
  if (status == 77) GTEST_SKIP() << "cannot make a private mount namespace here";
  EXPECT_EQ(status, 0) << "see the lines above";
}

// Only the output's file system is full: the SIF is complete in the cache, the output
// is not written at all, and a pull to another directory copies the cached SIF without
// downloading anything.
TEST_F(PullFaults, AFullOutputDirectoryWritesNoPartialSifAndKeepsTheCachedImage) {
  const std::string small_fs = work / "small-out";
  fs::create_directories(small_fs);
  const std::string fs_out = small_fs + "/out.sif";
  int status = test::in_private_mount_namespace([&] {
    if (::mount("tmpfs", small_fs.c_str(), "tmpfs", 0, "size=256k") != 0) return false;
    test::ChildChecks check;
    auto first = run_process(capsa_argv({"pull", "-q", "--nohttps", fs_out, image(kBusybox)}), "", 300);
    check.expect(first.exit_code == 1, "the pull fails: " + first.err);
    check.expect(count_lines_with(first.err, "capsa: error") == 1, "one error line: " + first.err);
    check.expect(first.err.find("No space left on device") != std::string::npos, "says why: " + first.err);
    check.expect(first.err.find(small_fs + "/") != std::string::npos, "names the path: " + first.err);
    check.expect(first.err.find(small_fs) != std::string::npos, "names the output: " + first.err);
    check.expect(files_in(small_fs).empty(), "nothing in the output directory");
    test::CacheCheck cached = test::check_cache(cache);
    check.expect(cached.problems.empty() && cached.sifs == 1,
                 "the converted SIF is in the cache: " + test::joined(cached.problems));
    return check.report();
  });
  if (status == 77) GTEST_SKIP() << "cannot make a private mount namespace here";
  ASSERT_EQ(status, 0) << "see the lines above";
  proxy.configure({});
  auto elsewhere = pull(kBusybox);
  ASSERT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  expect_valid_output();
  EXPECT_TRUE(blob_gets().empty()) << "nothing downloaded again";
}

}  // namespace
}  // namespace capsa::pull
