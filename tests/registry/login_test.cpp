// `capsa registry login|logout|list` and the file it keeps (registry/credential_store.hpp):
// the store on its own, then the command against the real TLS + token and TLS + Basic
// test registries, with the login used by a later push.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "registry/base64.hpp"
#include "registry/credential_store.hpp"
#include "registry/credentials.hpp"
#include "support/background.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::registry {
namespace {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(CredentialStore, StoresReplacesAndRemovesKeepingTheRestOfTheFile) {
  TempDir dir;
  const std::string path = dir / "apptainer/docker-config.json";  // the directory is created
  store_login(path, "ghcr.io", "me", "pa:ss");
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_EQ(mode_of(dir / "apptainer"), 0700u);
  auto found = credentials_from_docker_config(path, "ghcr.io");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->username, "me");
  EXPECT_EQ(found->password, "pa:ss");

  // What docker/cli keeps beside "auths" survives; a second login replaces the first.
  const std::string other = dir.write("other.json", R"({"auths":{"https://ghcr.io":{"auth":"eDp5"}},"psFormat":"t"})");
  store_login(other, "ghcr.io", "new", "pw");
  const auto config = nlohmann::json::parse(test::read_file(other));
  EXPECT_EQ(config["psFormat"], "t");
  EXPECT_EQ(config["auths"].size(), 1u) << config.dump();
  EXPECT_EQ(config["auths"]["ghcr.io"]["auth"], base64_encode("new:pw"));

  // Docker Hub's key is docker/cli's.
  store_login(path, "docker.io", "hub", "h");
  EXPECT_EQ(stored_logins(path), (std::vector<std::string>{"ghcr.io", "https://index.docker.io/v1/"}));
  EXPECT_EQ(credentials_from_docker_config(path, "registry-1.docker.io")->username, "hub");

  EXPECT_TRUE(remove_login(path, "ghcr.io"));
  EXPECT_FALSE(remove_login(path, "ghcr.io"));
  EXPECT_FALSE(credentials_from_docker_config(path, "ghcr.io"));
  EXPECT_EQ(mode_of(path), 0600u);

  EXPECT_THROW(store_login(dir.write("bad.json", "[1,2]"), "x.io", "u", "p"), FormatError);
}

TEST(CredentialStore, WhereLoginsGoAsApptainerChoosesAndTheLookupReadsThem) {
  auto env = [](const std::map<std::string, std::string>& values) {
    return [values](const std::string& name) -> std::optional<std::string> {
      auto it = values.find(name);
      return it == values.end() ? std::nullopt : std::optional(it->second);
    };
  };
  EXPECT_EQ(login_config_path(env({{"HOME", "/h"}})), "/h/.apptainer/docker-config.json");
  EXPECT_EQ(login_config_path(env({{"HOME", "/h"}, {"APPTAINER_CONFIGDIR", "/c"}})), "/c/docker-config.json");
  EXPECT_EQ(login_config_path(env({{"HOME", "/h"}, {"SINGULARITY_CONFIGDIR", "/s"}})), "/s/docker-config.json");
  // Both files are searched, Apptainer's first.
  EXPECT_EQ(docker_config_paths(env({{"HOME", "/h"}})),
            (std::vector<std::string>{"/h/.apptainer/docker-config.json", "/h/.docker/config.json"}));
}

class RegistryLogin : public ::testing::Test {
 protected:
  TempDir work;
  std::string home = work / "home";
  std::string config = home + "/.apptainer/docker-config.json";

  void SetUp() override { std::filesystem::create_directories(home); }

  ProcessResult capsa(std::vector<std::string> args, const std::string& input = "") {
    std::vector<std::string> argv = {"env",
                                     "-u",
                                     "DOCKER_CONFIG",
                                     "-u",
                                     "APPTAINER_CONFIGDIR",
                                     "HOME=" + home,
                                     "CAPSA_CACHEDIR=" + (work / "cache"),
                                     "CAPSA_REGISTRY_CA=" + test::test_registry().ca_file,
                                     test::capsa_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, input, 120);
  }
  static int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }
};

TEST_F(RegistryLogin, TokenRegistryLoginIsCheckedStoredUsedAndRemoved) {
  const auto& r = test::test_registry();
  auto login = capsa({"registry", "login", "--username", "$oauthtoken", "--password-stdin", "oras://" + r.token},
                     r.api_key + "\n");
  ASSERT_EQ(login.exit_code, 0) << login.err;
  EXPECT_NE(login.err.find("Token stored in " + config), std::string::npos) << login.err;
  EXPECT_EQ((login.out + login.err).find(r.api_key), std::string::npos) << "the secret was printed";
  EXPECT_EQ(mode_of(config), 0600u);
  const auto stored = nlohmann::json::parse(test::read_file(config));
  EXPECT_EQ(stored["auths"][r.token]["auth"], base64_encode("$oauthtoken:" + r.api_key)) << stored.dump();

  auto list = capsa({"registry", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("URI"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find(r.token), std::string::npos) << list.out;

  // The stored login is what a push to the token registry (which needs it) uses.
  const std::string target = "oras://" + r.token + "/private/login-" + std::to_string(::getpid()) + ":1";
  auto push = capsa({"push", test::sif_fixture("real/busybox_amd64.sif"), target});
  EXPECT_EQ(push.exit_code, 0) << push.err;

  auto logout = capsa({"registry", "logout", "oras://" + r.token});
  ASSERT_EQ(logout.exit_code, 0) << logout.err;
  EXPECT_FALSE(credentials_from_docker_config(config, r.token));
  auto denied = capsa({"push", test::sif_fixture("real/busybox_amd64.sif"), target});
  EXPECT_EQ(denied.exit_code, 1) << "the login was not removed";
  auto again = capsa({"registry", "logout", "oras://" + r.token});
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_NE(again.err.find("no existing login"), std::string::npos) << again.err;
}

TEST_F(RegistryLogin, AWrongPasswordIsOneLineNamingTheRegistryAndStoresNothing) {
  const auto& r = test::test_registry();
  for (const std::string& registry : {"docker://" + r.token, "oras://" + r.basic}) {
    const std::string user = registry.starts_with("docker") ? "$oauthtoken" : r.basic_user;
    auto login = capsa({"registry", "login", "-u", user, "--password-stdin", registry}, "not-the-password");
    EXPECT_EQ(login.exit_code, 1) << registry;
    EXPECT_EQ(lines(login.err), 1) << login.err;
    EXPECT_NE(login.err.find("401"), std::string::npos) << login.err;
    EXPECT_NE(login.err.find(registry.substr(registry.find("//") + 2)), std::string::npos) << login.err;
    EXPECT_EQ(login.err.find("not-the-password"), std::string::npos) << login.err;
    EXPECT_FALSE(std::filesystem::exists(config)) << registry;
  }
}

TEST_F(RegistryLogin, BasicRegistryLoginAndBadArguments) {
  const auto& r = test::test_registry();
  auto login = capsa({"registry", "login", "--username", r.basic_user, "--password-stdin", "docker://" + r.basic},
                     r.basic_password);
  ASSERT_EQ(login.exit_code, 0) << login.err;
  EXPECT_EQ(credentials_from_docker_config(config, r.basic)->password, r.basic_password);

  // --authfile: that file instead.
  const std::string authfile = work / "auth.json";
  auto elsewhere = capsa(
      {"registry", "login", "-u", r.basic_user, "--password-stdin", "--authfile", authfile, "docker://" + r.basic},
      r.basic_password);
  ASSERT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  EXPECT_EQ(credentials_from_docker_config(authfile, r.basic)->username, r.basic_user);

  auto no_scheme = capsa({"registry", "login", "-u", "x", "--password-stdin", r.basic}, "p");
  EXPECT_EQ(no_scheme.exit_code, 1);
  EXPECT_EQ(lines(no_scheme.err), 1) << no_scheme.err;
  EXPECT_NE(no_scheme.err.find("docker://HOST"), std::string::npos) << no_scheme.err;
  auto no_user = capsa({"registry", "login", "--password-stdin", "oras://" + r.basic}, "p");
  EXPECT_EQ(no_user.exit_code, 1);
  EXPECT_NE(no_user.err.find("--username"), std::string::npos) << no_user.err;
}

// Apptainer's `remote login` of a docker:// or oras:// URI is a registry login: the same
// check, the same file, -u/-p/--password-stdin, and -i for a registry over plain http.
TEST_F(RegistryLogin, RemoteLoginOfARegistryUriIsARegistryLogin) {
  const auto& r = test::test_registry();
  auto basic = capsa({"remote", "login", "--username", r.basic_user, "--password-stdin", "docker://" + r.basic},
                     r.basic_password + "\n");
  ASSERT_EQ(basic.exit_code, 0) << basic.err;
  EXPECT_NE(basic.err.find("ran 'registry login'"), std::string::npos) << basic.err;
  EXPECT_NE(basic.err.find("Token stored in " + config), std::string::npos) << basic.err;
  EXPECT_EQ((basic.out + basic.err).find(r.basic_password), std::string::npos) << "the secret was printed";
  EXPECT_EQ(credentials_from_docker_config(config, r.basic)->password, r.basic_password);
  EXPECT_EQ(mode_of(config), 0600u);

  auto token = capsa({"remote", "login", "-u", "$oauthtoken", "--password-stdin", "oras://" + r.token}, r.api_key);
  ASSERT_EQ(token.exit_code, 0) << token.err;
  EXPECT_EQ(credentials_from_docker_config(config, r.token)->password, r.api_key);
  auto wrong = capsa({"remote", "login", "-u", "$oauthtoken", "--password-stdin", "oras://" + r.token}, "nope");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("401"), std::string::npos) << wrong.err;
  EXPECT_EQ(credentials_from_docker_config(config, r.token)->password, r.api_key) << "a failed login replaced one";

  // The plain-HTTP registry: refused over https, logged in to with --insecure.
  auto tls = capsa({"remote", "login", "-u", "anyone", "--password-stdin", "docker://" + r.plain}, "pw");
  EXPECT_EQ(tls.exit_code, 1) << tls.err;
  EXPECT_FALSE(credentials_from_docker_config(config, r.plain));
  auto insecure = capsa({"remote", "login", "-i", "-u", "anyone", "--password-stdin", "docker://" + r.plain}, "pw");
  ASSERT_EQ(insecure.exit_code, 0) << insecure.err;
  EXPECT_EQ(credentials_from_docker_config(config, r.plain)->username, "anyone");

  // Flags that belong to registries, given for a library remote, and the other way round.
  ASSERT_EQ(capsa({"remote", "add", "--no-login", "lib", "https://library.example.org"}).exit_code, 0);
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"remote", "login", "-u", "x", "lib"}, "--username applies to docker://"},
           {{"remote", "login", "--insecure", "lib"}, "--insecure applies to docker://"},
           {{"remote", "login", "--tokenfile", "/dev/null", "-u", "x", "docker://" + r.basic}, "--tokenfile"},
       }) {
    auto refused = capsa(args, "pw");
    EXPECT_EQ(refused.exit_code, 1) << says;
    EXPECT_EQ(lines(refused.err), 1) << refused.err;
    EXPECT_NE(refused.err.find(says), std::string::npos) << refused.err;
  }
}

// -p/--password is visible to every user in /proc/PID/cmdline: capsa overwrites it as it
// starts, and the login (held up by a registry that never answers) runs with it hidden.
TEST_F(RegistryLogin, PasswordFlagIsHiddenFromTheProcessList) {
  UniqueFd silent(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(silent.get(), 4), 0);  // connections wait in the backlog, never answered
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(silent.get(), reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string registry = "oras://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  const std::string secret = "s3cret-" + std::to_string(::getpid());

  test::Background login(
      {"env", "HOME=" + home, test::capsa_binary(), "registry", "login", "-u", "me", "-p", secret, registry},
      work / "err");
  std::string shown;
  const bool hidden = test::eventually(
      [&] {
        shown = test::read_file("/proc/" + std::to_string(login.pid()) + "/cmdline");
        std::replace(shown.begin(), shown.end(), '\0', ' ');
        return shown.find("registry login") != std::string::npos && shown.find(secret) == std::string::npos;
      },
      20);
  EXPECT_TRUE(hidden) << shown;
  EXPECT_NE(shown.find("-p " + std::string(secret.size(), '*')), std::string::npos) << shown;
  EXPECT_FALSE(login.finished()) << "the login was meant to be waiting for the registry";

  // `remote login -p` of a registry: the same.
  test::Background remote(
      {"env", "HOME=" + home, test::capsa_binary(), "remote", "login", "-u", "me", "-p", secret, registry},
      work / "remote-err");
  const bool remote_hidden = test::eventually(
      [&] {
        shown = test::read_file("/proc/" + std::to_string(remote.pid()) + "/cmdline");
        std::replace(shown.begin(), shown.end(), '\0', ' ');
        return shown.find("remote login") != std::string::npos && shown.find(secret) == std::string::npos;
      },
      20);
  EXPECT_TRUE(remote_hidden) << shown;
  EXPECT_NE(shown.find("-p " + std::string(secret.size(), '*')), std::string::npos) << shown;
}

}  // namespace
}  // namespace capsa::registry
