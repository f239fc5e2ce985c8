// `capsa pull|exec http://…/IMAGE.sif` against Python's http.server: Apptainer's default
// name, the cache keyed by URL and Last-Modified (a second run asks with HEAD only), and
// the bad cases (404, not a SIF) leaving no file and no cache entry behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "support/background.hpp"
#include "support/cache_check.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::pull {
namespace {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

class NetPull : public ::testing::Test {
 protected:
  TempDir work;
  std::string cache = work / "cache";
  std::string served = work / "served";
  std::unique_ptr<test::Background> server;
  std::string base;  // http://127.0.0.1:PORT

  void SetUp() override {
    std::filesystem::create_directories(served);
    // Made with a cache of its own: the tests count the entries in theirs.
    auto pulled = capsa({"pull", "--nohttps", "--disable-cache", served + "/busybox.sif",
                         "docker://" + test::test_registry().plain + "/public/busybox:1.0"});
    ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
    work.write("served/notes.txt", "an HTML page or a README, not an image\n");
    // Port 0: the kernel picks a free one, which the server prints.
    server = std::make_unique<test::Background>(std::vector<std::string>{"python3", "-u", "-m", "http.server", "0",
                                                                         "--bind", "127.0.0.1", "--directory", served},
                                                work / "server.err", false, work / "server.out");
    std::smatch port;
    ASSERT_TRUE(test::eventually(
        [&] {
          static const std::regex pattern("port ([0-9]+)");
          const std::string text =
              std::filesystem::exists(work / "server.out") ? test::read_file(work / "server.out") : "";
          if (!std::regex_search(text, port, pattern)) return false;
          base = "http://127.0.0.1:" + port[1].str();
          return true;
        },
        30))
        << "http.server did not start";
  }

  ProcessResult capsa(std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + cache, test::capsa_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, "", 600);
  }
  // How many times the server sent a file (GET), and answered HEAD.
  int requests(const std::string& method) {
    const std::string log = test::read_file(work / "server.err");
    int n = 0;
    for (std::size_t at = 0; (at = log.find("\"" + method + " /", at)) != std::string::npos; ++at) ++n;
    return n;
  }
  int cached_sifs() { return std::filesystem::exists(cache) ? test::check_cache(cache).sifs : 0; }
};

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

TEST_F(NetPull, PullNamesTheFileAfterTheUrlAndExecReusesTheCache) {
  ASSERT_EQ(::chdir(work.path().c_str()), 0);
  auto named = capsa({"pull", "--disable-cache", base + "/busybox.sif?download=1"});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  ASSERT_TRUE(exists(work / "busybox.sif")) << "named after the URL's last path component";
  EXPECT_EQ(test::read_file(work / "busybox.sif"), test::read_file(served + "/busybox.sif"));
  EXPECT_EQ(requests("GET"), 1);
  EXPECT_EQ(cached_sifs(), 0) << "--disable-cache downloads straight to the output";

  auto pulled = capsa({"pull", work / "cached.sif", base + "/busybox.sif"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(test::read_file(work / "cached.sif"), test::read_file(served + "/busybox.sif"));
  auto run = capsa({"exec", work / "cached.sif", "cat", "/etc/passwd"});
  EXPECT_NE(run.out.find("root:x:0:0"), std::string::npos) << run.err;
  EXPECT_EQ(requests("GET"), 2);
  EXPECT_EQ(cached_sifs(), 1);

  auto exec = capsa({"exec", base + "/busybox.sif", "cat", "/etc/group"});
  EXPECT_NE(exec.out.find("root:x:0:"), std::string::npos) << exec.err;
  EXPECT_EQ(requests("GET"), 2) << "the same URL and Last-Modified: the cached file";
  EXPECT_GE(requests("HEAD"), 2);
  EXPECT_EQ(cached_sifs(), 1);
  auto again = capsa({"pull", work / "again.sif", base + "/busybox.sif"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(requests("GET"), 2);
  ASSERT_EQ(::chdir("/"), 0);
}

TEST_F(NetPull, NotFoundAndNotASifLeaveNothing) {
  for (const bool disable_cache : {false, true}) {
    SCOPED_TRACE(disable_cache ? "--disable-cache" : "cached");
    std::vector<std::string> args = {"pull"};
    if (disable_cache) args.emplace_back("--disable-cache");
    auto absent_args = args;
    absent_args.insert(absent_args.end(), {work / "absent.sif", base + "/absent.sif"});
    auto absent = capsa(absent_args);
    EXPECT_NE(absent.exit_code, 0);
    EXPECT_NE(absent.err.find("/absent.sif: not found (HTTP 404)"), std::string::npos) << absent.err;
    EXPECT_FALSE(exists(work / "absent.sif"));

    auto text_args = args;
    text_args.insert(text_args.end(), {work / "notes.sif", base + "/notes.txt"});
    auto text = capsa(text_args);
    EXPECT_NE(text.exit_code, 0);
    EXPECT_NE(text.err.find("/notes.txt: what the server sent is not a SIF image"), std::string::npos) << text.err;
    EXPECT_FALSE(exists(work / "notes.sif"));
  }
  auto exec = capsa({"exec", base + "/notes.txt", "true"});
  EXPECT_NE(exec.exit_code, 0);
  EXPECT_EQ(cached_sifs(), 0);
  if (std::filesystem::exists(cache)) {
    auto check = test::check_cache(cache);
    EXPECT_TRUE(check.problems.empty()) << check.problems.front();
  }
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(work.path())) left.push_back(entry.path().filename());
  for (const auto& name : left) EXPECT_EQ(name.find(".capsa-tmp-"), std::string::npos) << name;
}

}  // namespace
}  // namespace capsa::pull
