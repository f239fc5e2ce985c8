// `capsa remote` against the test library server (library_server.py) run with a token:
// each subcommand, the user's file and its mode, the token's way from a prompt or standard
// input to the Authorization header of a library:// pull (and nowhere else: not stderr,
// not the process list, not another host), the administrator's list and an exclusive
// remote, and the one-line failures. Root and test user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "site_prefix.hpp"
#include "support/background.hpp"
#include "support/isolated_capsa.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::library {
namespace {

namespace fs = std::filesystem;
using test::run_process;

constexpr const char* kToken = "capsa-test-token-5e1b7c9a";

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Every process's command line, NUL bytes as blanks.
std::string all_command_lines() {
  std::string all;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(line.begin(), line.end(), '\0', ' ');
    all += line + "\n";
  }
  return all;
}

// Whether `remote list` marks the row of `name` in the column headed `column`.
bool marked(const std::string& listing, const std::string& name, const std::string& column) {
  const auto header = listing.find("NAME ");
  const auto row = listing.find("\n" + name + " ");
  if (header == std::string::npos || row == std::string::npos) return false;
  const auto at = listing.find(column, header) - header;  // the columns before are ASCII
  return listing.compare(row + 1 + at, 3, "\u2713") == 0;
}

class Remote : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(work.path().c_str(), 0755);
    fs::create_directories(work / "home");
    fs::create_directories(work / "out");
    work.write("token", std::string(kToken) + "\n");
    work.write("catalog.json", R"([{"path": "capsa/tests/box:1.0", "file": ")" +
                                   test::sif_fixture("real/busybox_amd64.sif") +
                                   R"(", "mode": "normal", "arch": "amd64"}])");
    server = std::make_unique<test::Background>(
        std::vector<std::string>{std::string(CAPSA_SOURCE_DIR) + "/tests/library/library_server.py",
                                 work / "catalog.json", work / "ports", work / "token"},
        work / "server.err");
    ASSERT_TRUE(test::eventually([&] { return fs::exists(work / "ports"); }, 30))
        << test::read_file(work / "server.err");
    int port = 0;
    std::ifstream(work / "ports") >> port;
    endpoint = "127.0.0.1:" + std::to_string(port);
    url = "http://" + endpoint;
  }

  // capsa with HOME (so ~/.apptainer/remote.yaml) and the cache in the test's folder.
  test::ProcessResult capsa(std::vector<std::string> args, const std::string& input = "",
                            const std::string& binary = test::capsa_binary()) {
    const auto argv = test::isolated_capsa_argv(
        {.home = work / "home", .cache = work / "cache", .directory = work / "out", .binary = binary}, args);
    return run_process(argv, input, 300);
  }

  std::string remote_file() { return work / "home/.apptainer/remote.yaml"; }

  mode_t file_mode(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }

  // Every output of a command, to check that no token is in it.
  void expect_no_token(const test::ProcessResult& r) {
    EXPECT_EQ(r.out.find(kToken), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find(kToken), std::string::npos) << r.err;
  }

  test::TempDir work;
  std::unique_ptr<test::Background> server;
  std::string endpoint, url;
};

TEST_F(Remote, AddUseListRemoveKeepTheUsersFileMode0600) {
  auto plain = capsa({"remote", "add", "--no-login", "lib", url});
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_EQ(lines(plain.err), 1) << plain.err;
  EXPECT_NE(plain.err.find("add it with --insecure"), std::string::npos) << plain.err;
  EXPECT_FALSE(fs::exists(remote_file()));

  auto added = capsa({"remote", "add", "--no-login", "--insecure", "lib", url});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  EXPECT_EQ(file_mode(remote_file()), 0600u);
  EXPECT_NE(test::read_file(remote_file()).find("URI: " + url), std::string::npos) << test::read_file(remote_file());
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "other", "library.example.org"}).exit_code, 0);
  auto again = capsa({"remote", "add", "--no-login", "other", "library.example.org"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(lines(again.err), 1) << again.err;
  EXPECT_NE(again.err.find("a remote named other exists already"), std::string::npos) << again.err;

  auto listed = capsa({"remote", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("DEFAULT?"), std::string::npos) << listed.out;
  EXPECT_FALSE(marked(listed.out, "lib", "DEFAULT?")) << "nothing is in use yet: " << listed.out;
  EXPECT_FALSE(marked(listed.out, "other", "DEFAULT?")) << listed.out;
  EXPECT_TRUE(marked(listed.out, "other", "SECURE?")) << "https: " << listed.out;

  ASSERT_EQ(capsa({"remote", "use", "lib"}).exit_code, 0);
  listed = capsa({"remote", "list"});
  // The active remote is marked in the DEFAULT? column.
  EXPECT_TRUE(marked(listed.out, "lib", "DEFAULT?")) << listed.out;
  EXPECT_FALSE(marked(listed.out, "other", "DEFAULT?")) << listed.out;
  EXPECT_FALSE(marked(listed.out, "lib", "SECURE?")) << "plain http: " << listed.out;
  EXPECT_NE(test::read_file(remote_file()).find("Active: lib"), std::string::npos);
  EXPECT_EQ(file_mode(remote_file()), 0600u);

  // -c names another file for the user's list.
  ASSERT_EQ(capsa({"remote", "-c", work / "alt.yaml", "add", "--no-login", "alt", "library.example.org"}).exit_code, 0);
  EXPECT_EQ(file_mode(work / "alt.yaml"), 0600u);
  EXPECT_EQ(test::read_file(remote_file()).find("alt:"), std::string::npos);
  EXPECT_NE(capsa({"remote", "-c", work / "alt.yaml", "list"}).out.find("\nalt "), std::string::npos);

  ASSERT_EQ(capsa({"remote", "remove", "lib"}).exit_code, 0);
  listed = capsa({"remote", "list"});
  EXPECT_EQ(listed.out.find("\nlib "), std::string::npos) << listed.out;
  EXPECT_EQ(test::read_file(remote_file()).find("Active: lib"), std::string::npos);
  EXPECT_EQ(file_mode(remote_file()), 0600u);
}

// A rewrite keeps a narrower mode than capsa's own: an administrator's 0640 list (issue
// 45: it was rewritten 0644) and a user's read-only 0400 file stay as they were made.
TEST_F(Remote, ARewriteNeverWidensTheFilesMode) {
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "one", "library.example.org"}).exit_code, 0);
  ASSERT_EQ(::chmod(remote_file().c_str(), 0400), 0);
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "two", "library.example.org"}).exit_code, 0);
  EXPECT_EQ(file_mode(remote_file()), 0400u);
  EXPECT_NE(test::read_file(remote_file()).find("two:"), std::string::npos);
  if (::geteuid() != 0) return;  // the system-wide list is root's
  const auto& prefix = config::testing::SitePrefix::get();
  const std::string installed = prefix.path() + "/bin/capsa";
  const std::string system_file = prefix.path() + "/etc/capsa/remote.yaml";
  ASSERT_EQ(capsa({"remote", "add", "--global", "--insecure", "site", url}, "", installed).exit_code, 0);
  EXPECT_EQ(file_mode(system_file), 0644u) << "a new list is readable by every user";
  ASSERT_EQ(::chmod(system_file.c_str(), 0640), 0);
  ASSERT_EQ(capsa({"remote", "add", "--global", "--insecure", "site2", url}, "", installed).exit_code, 0);
  EXPECT_EQ(file_mode(system_file), 0640u) << "root's rewrite widened the administrator's list";
  std::filesystem::remove(system_file);
}

TEST_F(Remote, LoginTakesTheTokenFromStandardInputAndPullsSendIt) {
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "--insecure", "lib", url}).exit_code, 0);
  ASSERT_EQ(capsa({"remote", "use", "lib"}).exit_code, 0);
  // Without a token the library refuses, and says which endpoint did.
  auto refused = capsa({"pull", "library://capsa/tests/box:1.0"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_EQ(lines(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find(endpoint), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("HTTP 401"), std::string::npos) << refused.err;

  auto login = capsa({"remote", "login"}, std::string(kToken) + "\n");
  ASSERT_EQ(login.exit_code, 0) << login.err;
  expect_no_token(login);
  EXPECT_NE(test::read_file(remote_file()).find(kToken), std::string::npos);
  EXPECT_EQ(file_mode(remote_file()), 0600u);
  auto listed = capsa({"remote", "list"});
  expect_no_token(listed);

  auto pulled = capsa({"pull", "library://capsa/tests/box:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  expect_no_token(pulled);
  EXPECT_TRUE(fs::exists(work / "out/box_1.0.sif"));
  EXPECT_NE(test::read_file(work / "ports.tokens").find("/v1/images/capsa/tests/box:1.0"), std::string::npos)
      << "the pull sent the token";

  // --library names another endpoint (the same server under another name): no token goes there.
  const std::string other = "http://localhost:" + endpoint.substr(endpoint.find(':') + 1);
  auto overridden = capsa({"pull", "--library", other, "second.sif", "library://capsa/tests/box:1.0"});
  EXPECT_NE(overridden.exit_code, 0) << "the token is not shown to another host";
  EXPECT_NE(overridden.err.find("HTTP 401"), std::string::npos) << overridden.err;
  EXPECT_NE(overridden.err.find("localhost:"), std::string::npos) << overridden.err;
  expect_no_token(overridden);

  auto status = capsa({"remote", "status"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  expect_no_token(status);
  EXPECT_NE(status.out.find("Checking status of remote: lib"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("1.0.0-capsa-test"), std::string::npos) << "the library's /version: " << status.out;
  EXPECT_NE(status.out.find("Valid authorization token"), std::string::npos) << status.out;

  ASSERT_EQ(capsa({"remote", "logout"}).exit_code, 0);
  EXPECT_EQ(test::read_file(remote_file()).find(kToken), std::string::npos);
  auto after = capsa({"pull", "third.sif", "library://capsa/tests/box:1.0"});
  EXPECT_NE(after.exit_code, 0);

  // --tokenfile, and `remote add` logging in at once.
  ASSERT_EQ(capsa({"remote", "add", "--insecure", "--tokenfile", work / "token", "lib2", url}).exit_code, 0);
  EXPECT_NE(test::read_file(remote_file()).find(kToken), std::string::npos);
}

TEST_F(Remote, ATokenNeverReachesTheProcessListOrStderr) {
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "--insecure", "lib", url}).exit_code, 0);
  // `remote login` waits on a pipe for its token: meanwhile no command line holds it.
  const std::string fifo = work / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  test::Background login(
      {"sh", "-c", "exec env HOME=\"$0\" \"$1\" remote login lib < \"$2\"", work / "home", test::capsa_binary(), fifo},
      work / "login.err");
  {
    std::ofstream writer(fifo);  // opens once the login's shell has opened its end
    ASSERT_TRUE(
        test::eventually([&] { return all_command_lines().find("remote login lib") != std::string::npos; }, 30));
    EXPECT_EQ(all_command_lines().find(kToken), std::string::npos);
    writer << kToken << "\n";
  }
  auto done = login.wait();
  EXPECT_EQ(done.exit_code, 0) << test::read_file(work / "login.err");
  EXPECT_EQ(test::read_file(work / "login.err").find(kToken), std::string::npos);
  EXPECT_NE(test::read_file(remote_file()).find(kToken), std::string::npos);
}

TEST_F(Remote, AWrongTokenIsA401LineNamingTheEndpoint) {
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "--insecure", "lib", url}).exit_code, 0);
  auto login = capsa({"remote", "login", "lib"}, "not-the-token\n");
  EXPECT_EQ(login.exit_code, 1);
  EXPECT_EQ(login.out, "");
  EXPECT_EQ(lines(login.err), 1) << login.err;
  EXPECT_NE(login.err.find("the library at " + endpoint + " rejected the token (HTTP 401)"), std::string::npos)
      << login.err;
  EXPECT_EQ(login.err.find("not-the-token"), std::string::npos) << login.err;
  EXPECT_EQ(test::read_file(remote_file()).find("not-the-token"), std::string::npos) << "a rejected token is not kept";
  // A stored token the library no longer takes (revoked): the pull says so in one line.
  std::ofstream(remote_file(), std::ios::trunc)
      << "Active: lib\nRemotes:\n  lib:\n    URI: " << url
      << "\n    Token: revoked-token\n    System: false\n    Exclusive: false\n";
  auto pulled = capsa({"pull", "library://capsa/tests/box:1.0"});
  EXPECT_NE(pulled.exit_code, 0);
  EXPECT_EQ(lines(pulled.err), 1) << pulled.err;
  EXPECT_NE(pulled.err.find("the library at " + endpoint + " rejected the token of remote lib (HTTP 401)"),
            std::string::npos)
      << pulled.err;
  EXPECT_EQ(pulled.err.find("revoked-token"), std::string::npos);
  auto status = capsa({"remote", "status"});
  EXPECT_EQ(status.exit_code, 1);
  EXPECT_EQ(status.out, "");
  EXPECT_NE(status.err.find("rejected the token (HTTP 401)"), std::string::npos) << status.err;
}

TEST_F(Remote, AnUnknownRemoteIsOneLine) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"remote", "use", "nope"},
                                               {"remote", "login", "nope"},
                                               {"remote", "logout", "nope"},
                                               {"remote", "status", "nope"},
                                               {"remote", "remove", "nope"}}) {
    auto r = capsa(args, "x\n");
    EXPECT_EQ(r.exit_code, 1) << args[1];
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("no remote named nope (see `capsa remote list`)"), std::string::npos) << r.err;
  }
  auto none = capsa({"remote", "login"}, "x\n");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no remote is in use"), std::string::npos) << none.err;
}

TEST_F(Remote, TheAdministratorsListAndAnExclusiveRemote) {
  const auto& prefix = config::testing::SitePrefix::get();
  const std::string installed = prefix.path() + "/bin/capsa";
  const std::string system_file = prefix.path() + "/etc/capsa/remote.yaml";
  auto global = capsa({"remote", "add", "--global", "--insecure", "site", url}, "", installed);
  auto exclusive = capsa({"remote", "use", "--exclusive", "site"}, "", installed);
  if (::geteuid() != 0) {
    for (const auto* r : {&global, &exclusive}) {
      EXPECT_EQ(r->exit_code, 1);
      EXPECT_EQ(lines(r->err), 1) << r->err;
      EXPECT_NE(r->err.find("only root may change the system-wide remote list"), std::string::npos) << r->err;
    }
    // What the administrator wrote: "site", exclusive.
    std::ofstream(system_file, std::ios::trunc)
        << "Active: site\nRemotes:\n  site:\n    URI: " << url << "\n    System: true\n    Exclusive: true\n";
    ::chmod(system_file.c_str(), 0644);
  } else {
    ASSERT_EQ(global.exit_code, 0) << global.err;
    ASSERT_EQ(exclusive.exit_code, 0) << exclusive.err;
    EXPECT_EQ(file_mode(system_file), 0644u) << "readable by every user, and it holds no token";
    EXPECT_NE(test::read_file(system_file).find("Exclusive: true"), std::string::npos) << test::read_file(system_file);
  }
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "mine", "library.example.org"}, "", installed).exit_code, 0);
  auto listed = capsa({"remote", "list"}, "", installed);
  EXPECT_NE(listed.out.find("site"), std::string::npos) << listed.out;
  auto use = capsa({"remote", "use", "mine"}, "", installed);
  EXPECT_EQ(use.exit_code, 1);
  EXPECT_EQ(lines(use.err), 1) << use.err;
  EXPECT_NE(use.err.find("the administrator made remote site exclusive"), std::string::npos) << use.err;
  // The user logs in to the system remote; the token stays in the user's own file.
  auto login = capsa({"remote", "login", "site"}, std::string(kToken) + "\n", installed);
  ASSERT_EQ(login.exit_code, 0) << login.err;
  EXPECT_EQ(test::read_file(system_file).find(kToken), std::string::npos);
  EXPECT_NE(test::read_file(remote_file()).find(kToken), std::string::npos);
  auto pulled = capsa({"pull", "library://capsa/tests/box:1.0"}, "", installed);
  EXPECT_EQ(pulled.exit_code, 0) << pulled.err;
  auto elsewhere = capsa({"pull", "--library", "https://library.example.org", "x.sif", "library://capsa/tests/box:1.0"},
                         "", installed);
  if (::geteuid() != 0) {
    EXPECT_EQ(elsewhere.exit_code, 1);
    EXPECT_EQ(lines(elsewhere.err), 1) << elsewhere.err;
    EXPECT_NE(elsewhere.err.find("the administrator made remote site exclusive"), std::string::npos) << elsewhere.err;
  }
  auto remove = capsa({"remote", "remove", "site"}, "", installed);
  EXPECT_EQ(remove.exit_code, 1);
  EXPECT_NE(remove.err.find("root removes it with --global"), std::string::npos) << remove.err;
  auto removed = capsa({"remote", "remove", "--global", "site"}, "", installed);
  EXPECT_EQ(removed.exit_code, ::geteuid() == 0 ? 0 : 1) << removed.err;
  if (::geteuid() == 0) EXPECT_EQ(test::read_file(system_file).find("site:"), std::string::npos);
  std::filesystem::remove(system_file);
}

}  // namespace
}  // namespace capsa::library
