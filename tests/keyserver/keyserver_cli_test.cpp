// `capsa keyserver`, `key search|pull|push` and `verify` fetching a signer's key, against a
// real keyserver (SKS, sks_server.hpp) in a private HOME: a pushed key is found, pulled
// into an empty keyring and fetched by verify; an unknown key, an unreachable keyserver
// and a malformed URI each fail in one line. Root and test user (the keyring and
// remote.yaml are the user's).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <memory>

#include "../config/site_prefix.hpp"
#include "sks_server.hpp"
#include "support/background.hpp"
#include "support/isolated_capsa.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::keyserver {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

std::string fingerprint_in(const std::string& newpair_output) {
  const std::string marker = "Key with fingerprint ";
  const auto at = newpair_output.find(marker);
  return at == std::string::npos ? "" : newpair_output.substr(at + marker.size(), 40);
}

class KeyserverCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server = std::make_unique<test::SksServer>(); }
  static void TearDownTestSuite() { server.reset(); }

  void SetUp() override {
    ::chmod(work.path().c_str(), 0755);
    fs::create_directories(work / "home");
  }

  // capsa with HOME (remote.yaml, the keyring) in the test's folder.
  ProcessResult capsa(const std::vector<std::string>& args, const std::string& input = "",
                      const std::string& home = "home") {
    const auto argv = test::isolated_capsa_argv({.home = work / home}, args);
    return test::run_process(argv, input, 120);
  }
  // The same with the installation of the suite's own (its global keyring is the test's).
  ProcessResult site_capsa(const std::vector<std::string>& args, const std::string& home = "home") {
    const std::string binary = config::testing::SitePrefix::get().path() + "/bin/capsa";
    return test::run_process(test::isolated_capsa_argv({.home = work / home, .binary = binary}, args), "", 120);
  }

  std::string remote_file(const std::string& home = "home") { return work / (home + "/.apptainer/remote.yaml"); }

  // A remote in use whose only keyserver is the test's SKS.
  void use_test_keyserver(const std::string& home = "home") {
    ASSERT_EQ(capsa({"remote", "add", "--no-login", "lib", "library.example.org"}, "", home).exit_code, 0);
    ASSERT_EQ(capsa({"remote", "use", "lib"}, "", home).exit_code, 0);
    auto added = capsa({"keyserver", "add", "--order", "1", server->url()}, "", home);
    ASSERT_EQ(added.exit_code, 0) << added.err;
    auto removed = capsa({"keyserver", "remove", "https://keys.openpgp.org"}, "", home);
    ASSERT_EQ(removed.exit_code, 0) << removed.err;
  }

  // A new unprotected key pair; its fingerprint.
  std::string new_key(const std::string& name, const std::string& home = "home") {
    auto made = capsa(
        {"key", "newpair", "--name", name, "--email", "keys@example.org", "--bit-length", "2048", "--password-stdin"},
        "\n", home);
    EXPECT_EQ(made.exit_code, 0) << made.err;
    return fingerprint_in(made.out);
  }

  void expect_one_line_failure(const ProcessResult& r, const std::string& says) {
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }

  static std::unique_ptr<test::SksServer> server;
  test::TempDir work;
};

std::unique_ptr<test::SksServer> KeyserverCli::server;

TEST_F(KeyserverCli, KeyserversOfARemoteAreAddedOrderedListedAndRemoved) {
  expect_one_line_failure(capsa({"keyserver", "add", server->url()}), "no remote is in use");
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "lib", "library.example.org"}).exit_code, 0);
  ASSERT_EQ(capsa({"remote", "use", "lib"}).exit_code, 0);
  auto listed = capsa({"keyserver", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out,
            "\nlib ^\n   #1  https://keys.openpgp.org  \U0001F512\n\n(* = system endpoint, ^ = default endpoint)\n");

  ASSERT_EQ(capsa({"keyserver", "add", "--order", "1", server->url()}).exit_code, 0);
  auto deprecated = capsa({"remote", "add-keyserver", "--order", "3", "--insecure", "lib", "hkp://keys.example.org"});
  ASSERT_EQ(deprecated.exit_code, 0) << deprecated.err;
  EXPECT_NE(deprecated.err.find("'remote add-keyserver' is deprecated"), std::string::npos) << deprecated.err;
  listed = capsa({"keyserver", "list", "lib"});
  // The URI column is as wide as its widest entry, https://keys.openpgp.org, and two blanks.
  EXPECT_NE(listed.out.find("#1  " + server->url() + std::string(26 - server->url().size(), ' ') +
                            "\n   #2  https://keys.openpgp.org"),
            std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("#3  hkp://keys.example.org"), std::string::npos) << listed.out;
  struct stat st {};
  ASSERT_EQ(::stat(remote_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // --insecure: no lock, and remembered in the file; -c names the file.
  ASSERT_EQ(capsa({"keyserver", "add", "--insecure", "https://insecure.example.org"}).exit_code, 0);
  const std::string yaml = test::read_file(remote_file());
  const auto entry = yaml.find("URI: https://insecure.example.org");
  ASSERT_NE(entry, std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("Insecure: true", entry), yaml.find("Insecure:", entry)) << yaml;
  listed = capsa({"keyserver", "-c", remote_file(), "list"});
  EXPECT_NE(listed.out.find("#4  https://insecure.example.org  \n"), std::string::npos) << listed.out;
  ASSERT_EQ(capsa({"keyserver", "remove", "lib", "https://insecure.example.org"}).exit_code, 0);
  expect_one_line_failure(capsa({"keyserver", "add", server->url()}), "is already configured");
  expect_one_line_failure(capsa({"keyserver", "add", "--order", "9", "https://other.example.org"}), "out of range");
  expect_one_line_failure(capsa({"keyserver", "add", "--order", "0", "https://other.example.org"}), "--order");
  expect_one_line_failure(capsa({"keyserver", "add", "nosuch", "https://other.example.org"}), "no remote named nosuch");
  expect_one_line_failure(capsa({"keyserver", "add", "keys.example.org"}), "is not valid");
  expect_one_line_failure(capsa({"keyserver", "add", "ftp://keys.example.org"}), "is not valid");

  auto removed = capsa({"remote", "remove-keyserver", "hkp://keys.example.org"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  ASSERT_EQ(capsa({"keyserver", "remove", "https://keys.openpgp.org"}).exit_code, 0);
  listed = capsa({"keyserver", "list"});
  EXPECT_EQ(listed.out, "\nlib ^\n   #1  " + server->url() + "  \n\n(* = system endpoint, ^ = default endpoint)\n");
  expect_one_line_failure(capsa({"keyserver", "remove", server->url()}), "the only one left");
  expect_one_line_failure(capsa({"keyserver", "remove", "https://keys.openpgp.org"}), "is not configured");
}

TEST_F(KeyserverCli, PushedKeyIsFoundPulledAndFetchedByVerify) {
  use_test_keyserver();
  const std::string fingerprint = new_key("Pushtest Signer");
  ASSERT_EQ(fingerprint.size(), 40u);
  auto pushed = capsa({"key", "push", "--url", server->url(), fingerprint});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_EQ(pushed.out, "public key `" + fingerprint + "' pushed to server successfully\n");

  ProcessResult found;
  ASSERT_TRUE(test::eventually(
      [&] {
        found = capsa({"key", "search", "Pushtest"});
        return found.exit_code == 0;
      },
      20))
      << found.err;
  EXPECT_EQ(found.out.rfind("Showing 1 results\n\nKEY ID    BITS  NAME/EMAIL\n", 0), 0u) << found.out;
  EXPECT_NE(found.out.find(fingerprint.substr(32) + "  2048  Pushtest Signer <keys@example.org>"), std::string::npos)
      << found.out;
  auto long_list = capsa({"key", "search", "--long-list", fingerprint});
  ASSERT_EQ(long_list.exit_code, 0) << long_list.err;
  EXPECT_NE(long_list.out.find(fingerprint + "  RSA        2048"), std::string::npos) << long_list.out;
  EXPECT_NE(long_list.out.find("[enabled]"), std::string::npos) << long_list.out;

  const std::string image = work / "signed.sif";
  fs::copy_file(test::sif_fixture("images/one-group.sif"), image);
  fs::permissions(image, fs::perms::owner_read | fs::perms::owner_write);
  auto signed_ = capsa({"sign", "--password-stdin", image}, "\n");
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;

  // Another user's HOME: the same remote list, an empty keyring.
  fs::create_directories(work / "other/.apptainer");
  fs::copy_file(remote_file(), remote_file("other"));
  auto local_only = capsa({"verify", "--local", image}, "", "other");
  expect_one_line_failure(local_only, "which is not in the keyring");
  auto fetched = capsa({"verify", image}, "", "other");
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  EXPECT_NE(fetched.err.find("Key " + fingerprint + " fetched from keyserver " + server->url()), std::string::npos)
      << fetched.err;
  EXPECT_NE(fetched.out.find("[REMOTE]           Signing entity: Pushtest Signer\n[REMOTE]           Fingerprint: " +
                             fingerprint + "\n"),
            std::string::npos)
      << fetched.out;
  // Verify used the key without keeping it.
  EXPECT_EQ(capsa({"key", "list"}, "", "other").out.find(fingerprint), std::string::npos);

  auto pulled = capsa({"key", "pull", fingerprint}, "", "other");
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(pulled.out.find("1 key(s) added to keyring of trust " + (work / "other/.capsa/keys")), 0u) << pulled.out;
  EXPECT_NE(capsa({"key", "list"}, "", "other").out.find(fingerprint), std::string::npos);
  auto again = capsa({"key", "pull", fingerprint}, "", "other");
  EXPECT_EQ(again.out.find("0 key(s) added"), 0u) << again.out;
  // --keysdir: another keyring of the user's.
  const std::string elsewhere = work / "other/elsewhere-keys";
  auto into = capsa({"key", "pull", "--keysdir", elsewhere, fingerprint.substr(24)}, "", "other");
  ASSERT_EQ(into.exit_code, 0) << into.err;
  EXPECT_EQ(into.out, "1 key(s) added to keyring of trust " + elsewhere + "\n");
  auto local = capsa({"verify", "--local", image}, "", "other");
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_NE(local.out.find("[LOCAL]            Fingerprint: " + fingerprint), std::string::npos) << local.out;
}

TEST_F(KeyserverCli, UnknownKeyUnreachableKeyserverAndMalformedUriFailInOneLine) {
  use_test_keyserver();
  const std::string unknown = "0123456789ABCDEF0123456789ABCDEF01234567";
  expect_one_line_failure(capsa({"key", "pull", unknown}), "no key matching 0x" + unknown + " on " + server->url());
  expect_one_line_failure(capsa({"key", "search", "nobody-has-this-name"}), "no key matching");
  expect_one_line_failure(capsa({"key", "pull", "xyz"}), "is no key");
  expect_one_line_failure(capsa({"key", "push", unknown}), "the keyring holds no public key");

  const std::string unreachable = "http://127.0.0.1:" + std::to_string(server->unused_port());
  expect_one_line_failure(capsa({"key", "pull", "--url", unreachable, unknown}),
                          "keyserver " + unreachable + " is unreachable");
  expect_one_line_failure(capsa({"key", "search", "--url", unreachable, "x"}), "is unreachable");
  expect_one_line_failure(capsa({"key", "pull", "--url", "hkp//127.0.0.1", unknown}), "is not valid");
  expect_one_line_failure(capsa({"key", "search", "--url", "gopher://127.0.0.1", "x"}), "is not valid");

  // A signed image whose signer no keyserver has, then no keyserver that answers.
  const std::string fingerprint = new_key("Unpublished Signer");
  const std::string image = work / "signed.sif";
  fs::copy_file(test::sif_fixture("images/one-group.sif"), image);
  fs::permissions(image, fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_EQ(capsa({"sign", "--password-stdin", image}, "\n").exit_code, 0);
  expect_one_line_failure(capsa({"key", "push", unknown}), "no public key " + unknown);
  fs::create_directories(work / "other/.apptainer");
  fs::copy_file(remote_file(), remote_file("other"));
  expect_one_line_failure(capsa({"verify", image}, "", "other"), "not in the keyring nor on the keyservers");
  expect_one_line_failure(capsa({"verify", "--url", unreachable, image}, "", "other"),
                          "fetching it failed: keyserver " + unreachable + " is unreachable");
  expect_one_line_failure(capsa({"verify", "--url", "nope", image}, "", "other"), "is not valid");
  EXPECT_NE(fingerprint, "");
}

// A listening socket that never accepts: a request to it waits until the test ends.
struct SilentServer {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::string url;
  SilentServer() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::listen(fd, 4), 0);  // connections wait in the backlog, never answered
    socklen_t length = sizeof address;
    EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
    url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  }
  ~SilentServer() { ::close(fd); }
};

TEST_F(KeyserverCli, NewpairPushSendsTheNewKeyAndItsPasswordLeavesTheProcessList) {
  use_test_keyserver();
  auto made = capsa(
      {"key", "newpair", "-N", "Newpair Pushed", "-E", "np@example.org", "-b", "2048", "--push", "--password-stdin"},
      "\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string fingerprint = fingerprint_in(made.out);
  ASSERT_EQ(fingerprint.size(), 40u) << made.out;
  EXPECT_NE(made.out.find("Key successfully pushed to keystore\n"), std::string::npos) << made.out;
  ProcessResult found;
  EXPECT_TRUE(test::eventually(
      [&] {
        found = capsa({"key", "search", "--long-list", fingerprint});
        return found.exit_code == 0;
      },
      20))
      << found.err;
  EXPECT_NE(found.out.find(fingerprint), std::string::npos) << found.out;

  // A keyserver that never answers: the key is made, the push waits, and meanwhile -P's
  // pass-phrase is not in the process list.
  SilentServer silent;
  ASSERT_EQ(capsa({"keyserver", "add", "--order", "1", silent.url}).exit_code, 0);
  const std::string secret = "pushed-phrase-" + std::to_string(::getpid());
  test::Background pushing(
      test::isolated_capsa_argv({.home = work / "home"}, {"key", "newpair", "-N", "Silent", "-E", "s@example.org", "-b",
                                                          "2048", "-U", "-P", secret}),
      work / "err");
  std::string shown;
  const bool hidden = test::eventually(
      [&] {
        shown = test::read_file("/proc/" + std::to_string(pushing.pid()) + "/cmdline");
        std::replace(shown.begin(), shown.end(), '\0', ' ');
        return shown.find("newpair") != std::string::npos && shown.find(secret) == std::string::npos;
      },
      20);
  EXPECT_TRUE(hidden) << shown;
  EXPECT_NE(shown.find("-P " + std::string(secret.size(), '*')), std::string::npos) << shown;
  // Killed while it waits: the gpg-agent it started for the keyring must not outlive the test.
  pushing.signal(SIGKILL);
  pushing.wait();
  test::run_process({"gpgconf", "--homedir", work / "home/.capsa/keys", "--kill", "gpg-agent"});
}

TEST_F(KeyserverCli, GlobalKeyringPullsAndPushesThroughTheKeyserver) {
  use_test_keyserver();
  const std::string global = config::testing::SitePrefix::get().path() + "/etc/capsa/global-pgp-public";
  std::filesystem::remove(global);
  const std::string fingerprint = new_key("Global Pulled");
  ASSERT_EQ(capsa({"key", "push", fingerprint}).exit_code, 0);
  // Another user's HOME, the same remotes: the key reaches the global keyring, not theirs.
  fs::create_directories(work / "other/.apptainer");
  fs::copy_file(remote_file(), remote_file("other"));
  ProcessResult pulled;
  ASSERT_TRUE(test::eventually(
      [&] {
        pulled = site_capsa({"key", "pull", "--global", fingerprint}, "other");
        return pulled.exit_code == 0;
      },
      20))
      << pulled.err;
  EXPECT_EQ(pulled.out, "1 key(s) added to keyring of trust " + global + "\n");
  EXPECT_NE(site_capsa({"key", "list", "-g"}, "other").out.find(fingerprint), std::string::npos);
  EXPECT_EQ(capsa({"key", "list"}, "", "other").out.find(fingerprint), std::string::npos);
  EXPECT_EQ(site_capsa({"key", "pull", "-g", fingerprint}, "other").out.find("0 key(s) added"), 0u);

  // Pushed from the global keyring by someone whose own keyring lacks it.
  auto pushed = site_capsa({"key", "push", "--global", fingerprint}, "other");
  EXPECT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_EQ(pushed.out, "public key `" + fingerprint + "' pushed to server successfully\n");
  expect_one_line_failure(site_capsa({"key", "push", fingerprint}, "other"), "the keyring holds no public key");
}

TEST_F(KeyserverCli, LoginPasswordFlagAndRemoteLoginOfAKeyserver) {
  use_test_keyserver();
  const std::string token = "capsa-flag-token-" + std::to_string(::getpid());
  auto in = capsa({"keyserver", "login", "-p", token, server->url()});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ((in.out + in.err).find(token), std::string::npos);
  EXPECT_NE(test::read_file(remote_file()).find("Auth: Bearer " + token), std::string::npos);
  ASSERT_EQ(capsa({"keyserver", "logout", server->url()}).exit_code, 0);

  // `remote login URI` of a keyserver is a keyserver login, as Apptainer's.
  auto remote = capsa({"remote", "login", "--username", "bob", "--password-stdin", server->url()}, "pw\n");
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_NE(remote.err.find("ran 'keyserver login'"), std::string::npos) << remote.err;
  EXPECT_NE(test::read_file(remote_file()).find("Auth: Basic Ym9iOnB3"), std::string::npos)
      << test::read_file(remote_file());
  expect_one_line_failure(capsa({"remote", "login", "-p", "x", "https://never.added.example"}),
                          "was added to a remote");
}

TEST_F(KeyserverCli, LoginKeepsTheCredentialsInTheUsersFileOnly) {
  use_test_keyserver();
  const std::string token = "capsa-keyserver-token-7f3a";
  expect_one_line_failure(capsa({"keyserver", "login", "https://never.added.example"}, token + "\n"),
                          "was added to a remote");
  expect_one_line_failure(capsa({"keyserver", "login", "--password", token, "--password-stdin", server->url()}),
                          "--password");
  auto in = capsa({"keyserver", "login", "--password-stdin", server->url()}, token + "\n");
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(in.err.find(token), std::string::npos);
  EXPECT_EQ(in.out.find(token), std::string::npos);
  const std::string stored = test::read_file(remote_file());
  EXPECT_NE(stored.find("Auth: Bearer " + token), std::string::npos) << stored;
  struct stat st {};
  ASSERT_EQ(::stat(remote_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // The login counts for the keyserver: its requests still work with it.
  const std::string fingerprint = new_key("Login Signer");
  auto pushed = capsa({"key", "push", "--keysdir", work / "home/.capsa/keys", fingerprint});
  EXPECT_EQ(pushed.exit_code, 0) << pushed.err;
  auto basic = capsa({"keyserver", "login", "--username", "alice", server->url()}, "s3cret\n");
  ASSERT_EQ(basic.exit_code, 0) << basic.err;
  EXPECT_NE(test::read_file(remote_file()).find("Auth: Basic YWxpY2U6czNjcmV0"), std::string::npos);
  EXPECT_EQ(test::read_file(remote_file()).find(token), std::string::npos) << "a new login replaces the old one";

  auto out = capsa({"keyserver", "logout", server->url()});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(test::read_file(remote_file()).find("Auth:"), std::string::npos) << test::read_file(remote_file());
  expect_one_line_failure(capsa({"keyserver", "logout", server->url()}), "not logged in");
  expect_one_line_failure(
      capsa({"keyserver", "login", "--password-stdin", "http://127.0.0.1:" + std::to_string(server->unused_port())},
            token + "\n"),
      "was added to a remote");
}

}  // namespace
}  // namespace capsa::keyserver
