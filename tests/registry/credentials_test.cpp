#include "registry/credentials.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::registry {
namespace {

using test::TempDir;

EnvLookup env_of(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional(it->second);
  };
}

TEST(Credentials, EnvironmentPrecedenceApptainerThenSingularityThenDocker) {
  auto all = env_of({{"APPTAINER_DOCKER_USERNAME", "a"}, {"APPTAINER_DOCKER_PASSWORD", "pa"},
                     {"SINGULARITY_DOCKER_USERNAME", "s"}, {"SINGULARITY_DOCKER_PASSWORD", "ps"},
                     {"DOCKER_USERNAME", "d"}, {"DOCKER_PASSWORD", "pd"}});
  EXPECT_EQ(credentials_from_environment(all)->username, "a");
  auto singularity = env_of({{"SINGULARITY_DOCKER_USERNAME", "s"}, {"SINGULARITY_DOCKER_PASSWORD", "ps"},
                             {"DOCKER_USERNAME", "d"}, {"DOCKER_PASSWORD", "pd"}});
  auto found = credentials_from_environment(singularity);
  EXPECT_EQ(found->username, "s");
  EXPECT_EQ(found->password, "ps");
  EXPECT_EQ(found->source, "SINGULARITY_DOCKER_USERNAME/SINGULARITY_DOCKER_PASSWORD");
  EXPECT_EQ(credentials_from_environment(env_of({{"DOCKER_USERNAME", "d"}, {"DOCKER_PASSWORD", "pd"}}))->username, "d");
  EXPECT_FALSE(credentials_from_environment(env_of({{"APPTAINER_DOCKER_USERNAME", "a"}})));
}

TEST(Credentials, DockerConfigAuthsBase64UsernamePasswordAndHubAliases) {
  TempDir dir;
  // base64("hubuser:pa:ss") -- the password holds a colon; "nvcr.io" uses separate fields.
  const std::string path = dir.write("config.json", R"({"auths": {
      "https://index.docker.io/v1/": {"auth": "aHVidXNlcjpwYTpzcw=="},
      "https://nvcr.io": {"username": "$oauthtoken", "password": "nvapi-key"},
      "localhost:5000": {"identitytoken": "refresh-me", "username": "<token>"}}})");
  for (const char* hub : {"registry-1.docker.io", "docker.io", "index.docker.io"}) {
    auto hub_credentials = credentials_from_docker_config(path, hub);
    ASSERT_TRUE(hub_credentials) << hub;
    EXPECT_EQ(hub_credentials->username, "hubuser");
    EXPECT_EQ(hub_credentials->password, "pa:ss");
    EXPECT_EQ(hub_credentials->source, path);
  }
  auto ngc = credentials_from_docker_config(path, "nvcr.io");
  EXPECT_EQ(ngc->username, "$oauthtoken");
  EXPECT_EQ(ngc->password, "nvapi-key");
  EXPECT_EQ(credentials_from_docker_config(path, "localhost:5000")->identity_token, "refresh-me");
  EXPECT_FALSE(credentials_from_docker_config(path, "quay.io"));
  EXPECT_FALSE(credentials_from_docker_config(dir / "missing.json", "quay.io"));
  EXPECT_THROW(credentials_from_docker_config(dir.write("bad.json", "{nope"), "quay.io"), FormatError);
}

TEST(Credentials, ParsingAConfigNamesTheHelperWithoutRunningIt) {
  const std::string text = R"({"credHelpers": {"nvcr.io": "ngc"}, "credsStore": "desktop",
                               "auths": {"quay.io": {"auth": "dTpw"}, "bad.io": {"auth": "bm9jb2xvbg=="}}})";
  auto ngc = parse_docker_config(text, "c.json", "nvcr.io");
  EXPECT_EQ(ngc.helper, "ngc");
  EXPECT_FALSE(ngc.credentials);
  auto quay = parse_docker_config(text, "c.json", "quay.io");
  EXPECT_FALSE(quay.helper);
  ASSERT_TRUE(quay.credentials);
  EXPECT_EQ(quay.credentials->username, "u");
  EXPECT_EQ(quay.credentials->password, "p");
  EXPECT_EQ(parse_docker_config(text, "c.json", "other.io").helper, "desktop");
  EXPECT_THROW(parse_docker_config(text, "c.json", "bad.io"), FormatError);  // "nocolon"
  EXPECT_THROW(parse_docker_config("[1]", "c.json", "quay.io"), FormatError);
}

TEST(Credentials, SearchOrderEnvironmentThenApptainerThenDockerConfig) {
  TempDir home;
  ASSERT_EQ(::mkdir((home / ".docker").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((home / ".apptainer").c_str(), 0700), 0);
  home.write(".docker/config.json", R"({"auths": {"r.example": {"username": "docker", "password": "d"}}})");
  auto env = env_of({{"HOME", home.path()}});
  EXPECT_EQ(find_credentials("r.example", env)->username, "docker");
  home.write(".apptainer/docker-config.json", R"({"auths": {"r.example": {"username": "apptainer", "password": "a"}}})");
  EXPECT_EQ(find_credentials("r.example", env)->username, "apptainer");
  auto with_vars = env_of({{"HOME", home.path()}, {"SINGULARITY_DOCKER_USERNAME", "var"},
                           {"SINGULARITY_DOCKER_PASSWORD", "v"}});
  EXPECT_EQ(find_credentials("r.example", with_vars)->username, "var");
  EXPECT_FALSE(find_credentials("other.example", env));
}

// A real executable speaking the docker-credential-helpers protocol, on PATH.
class CredentialHelperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string script = R"(#!/bin/sh
here=$(dirname "$0")
printf '%s\n' "$0" "$@" >> "$here/argv"
read -r url
printf '%s\n' "$url" >> "$here/stdin"
case "$url" in
  *unknown*) echo "credentials not found in native keychain"; exit 1 ;;
  *broken*) echo "the keychain is locked" >&2; exit 3 ;;
  *tokenhost*) printf '{"ServerURL":"%s","Username":"<token>","Secret":"idtoken-HELPER-SECRET"}' "$url" ;;
  *) printf '{"ServerURL":"%s","Username":"helperuser","Secret":"pw-HELPER-SECRET"}' "$url" ;;
esac
)";
    const std::string helper = bin_.write("docker-credential-capsatest", script);
    ASSERT_EQ(::chmod(helper.c_str(), 0755), 0);
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "/usr/bin:/bin";
    ::setenv("PATH", (bin_.path() + ":" + saved_path_).c_str(), 1);
  }
  void TearDown() override { ::setenv("PATH", saved_path_.c_str(), 1); }
  TempDir bin_;
  std::string saved_path_;
};

TEST_F(CredentialHelperTest, CredHelpersAndCredsStoreSecretOnlyThroughThePipe) {
  TempDir dir;
  const std::string path = dir.write("config.json", R"({"credsStore": "capsatest",
      "credHelpers": {"helped.example": "capsatest"},
      "auths": {"plain.example": {"username": "u", "password": "p"}}})");
  auto helped = credentials_from_docker_config(path, "helped.example");
  ASSERT_TRUE(helped);
  EXPECT_EQ(helped->username, "helperuser");
  EXPECT_EQ(helped->password, "pw-HELPER-SECRET");
  EXPECT_EQ(credentials_from_docker_config(path, "plain.example")->username, "u");  // auths beats credsStore
  EXPECT_EQ(credentials_from_docker_config(path, "docker.io")->password, "pw-HELPER-SECRET");  // credsStore
  auto token = credentials_from_docker_config(path, "tokenhost.example");
  EXPECT_EQ(token->identity_token, "idtoken-HELPER-SECRET");
  EXPECT_TRUE(token->password.empty());
  EXPECT_FALSE(credentials_from_docker_config(path, "unknown.example"));  // "credentials not found"
  try {
    credentials_from_docker_config(path, "broken.example");
    ADD_FAILURE() << "a failing helper must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("docker-credential-capsatest failed for broken.example: the keychain is locked"),
              std::string::npos) << e.what();
  }
  const std::string argv = test::read_file(bin_ / "argv");
  EXPECT_EQ(argv.find("SECRET"), std::string::npos);
  EXPECT_NE(argv.find("\nget\n"), std::string::npos) << argv;
  EXPECT_NE(test::read_file(bin_ / "stdin").find("https://index.docker.io/v1/\n"), std::string::npos);
}

TEST_F(CredentialHelperTest, MissingHelperAndHostileNamesAreClearErrors) {
  EXPECT_THROW(run_credential_helper("../../bin/sh", "r.example"), FormatError);
  try {
    run_credential_helper("not-installed-anywhere", "r.example");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("docker-credential-not-installed-anywhere"), std::string::npos);
  }
}

TEST(Prompt, PasswordIsNotEchoedAndEchoIsRestored) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(terminal, 0);

  Credentials answered;
  std::thread user([&] { answered = prompt_for_credentials(terminal, terminal, "nvcr.io"); });
  std::string screen;
  // Reads what the terminal shows until `text` appears (bounded by poll timeouts).
  auto read_until = [&](const std::string& text) {
    for (int i = 0; i < 100 && screen.find(text) == std::string::npos; ++i) {
      pollfd fd{master, POLLIN, 0};
      if (::poll(&fd, 1, 100) <= 0) continue;
      char buffer[256];
      const ssize_t got = ::read(master, buffer, sizeof buffer);
      if (got > 0) screen.append(buffer, static_cast<size_t>(got));
    }
  };
  read_until("Username for nvcr.io: ");
  ASSERT_EQ(::write(master, "$oauthtoken\n", 12), 12);
  read_until("Password: ");
  ASSERT_EQ(::write(master, "nvapi-TTY-SECRET\n", 17), 17);
  user.join();
  EXPECT_EQ(answered.username, "$oauthtoken");
  EXPECT_EQ(answered.password, "nvapi-TTY-SECRET");
  EXPECT_NE(screen.find("$oauthtoken"), std::string::npos) << screen;  // the username was echoed
  EXPECT_EQ(screen.find("TTY-SECRET"), std::string::npos) << screen;
  termios after{};
  ASSERT_EQ(::tcgetattr(terminal, &after), 0);
  EXPECT_TRUE(after.c_lflag & ECHO);
  ::close(terminal);
  ::close(master);
}

}  // namespace
}  // namespace capsa::registry
