// The test registries themselves (tests/test_registries/start.sh): what every pull test relies
// on. Talks to the real servers with the curl CLI; secrets go to curl on stdin (-K -).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "registry_http.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::test {
namespace {

constexpr const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kOciIndex = "application/vnd.oci.image.index.v1+json";

std::string token_url(const std::string& repository) {
  return test_registry().auth_realm + "?service=" + test_registry().service + "&scope=repository:" +
         repository + ":pull";
}

std::string manifest_url(const std::string& host, const std::string& repository, const std::string& ref,
                         const char* scheme = "https") {
  return std::string(scheme) + "://" + host + "/v2/" + repository + "/manifests/" + ref;
}

std::string accept_manifests() { return std::string("Accept: ") + kOciManifest + ", " + kOciIndex; }

std::string token_from(const HttpResponse& response) {
  const auto json = nlohmann::json::parse(response.body, nullptr, false);
  return json.is_object() ? json.value("token", std::string()) : std::string();
}

TEST(RegistryPlain, CatalogListsEveryPushedImageInBothNamespaces) {
  const auto response = http_get("http://" + test_registry().plain + "/v2/_catalog?n=1000");
  ASSERT_EQ(response.status, 200) << response.body;
  const auto repositories = nlohmann::json::parse(response.body)["repositories"];
  for (const char* name : {"busybox", "layers", "zstd", "multiplatform", "debian"}) {
    for (const char* ns : {"public/", "private/"}) {
      const std::string repository = std::string(ns) + name;
      EXPECT_NE(std::find(repositories.begin(), repositories.end(), repository), repositories.end())
          << repository << " missing from " << response.body;
    }
  }
  const auto tags = http_get("http://" + test_registry().plain + "/v2/public/busybox/tags/list");
  const auto list = nlohmann::json::parse(tags.body)["tags"];
  EXPECT_EQ(std::set<std::string>(list.begin(), list.end()), (std::set<std::string>{"1.0", "latest"}));
}

TEST(RegistryPlain, ManifestBytesHashToTheirDigestAndMatchTheFixtureLayout) {
  const auto response =
      http_get(manifest_url(test_registry().plain, "public/busybox", "latest", "http"), {accept_manifests()});
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(header(response, "Content-Type"), kOciManifest);
  const auto digest = header(response, "Docker-Content-Digest");
  EXPECT_EQ(digest, "sha256:" + sha256_hex(response.body));
  // Pushed with --preserve-digests: the registry serves the layout's own manifest.
  const auto index = nlohmann::json::parse(read_file(built_fixtures() + "/oci-busybox/index.json"));
  EXPECT_EQ(index["manifests"][0]["digest"], digest);
}

TEST(RegistryPlain, ZstdImageKeepsZstdLayers) {
  const auto response =
      http_get(manifest_url(test_registry().plain, "public/zstd", "latest", "http"), {accept_manifests()});
  ASSERT_EQ(response.status, 200) << response.body;
  const auto layers = nlohmann::json::parse(response.body)["layers"];
  ASSERT_EQ(layers.size(), 3u);
  for (const auto& layer : layers) EXPECT_EQ(layer["mediaType"], "application/vnd.oci.image.layer.v1.tar+zstd");
}

TEST(RegistryPlain, MultiplatformIndexListsItsPlatformsAndAnAttestation) {
  const auto response =
      http_get(manifest_url(test_registry().plain, "public/multiplatform", "latest", "http"), {accept_manifests()});
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(header(response, "Content-Type"), kOciIndex);
  const auto index = nlohmann::json::parse(response.body);
  std::vector<std::string> platforms;
  std::string attested;
  for (const auto& entry : index["manifests"]) {
    const auto& platform = entry["platform"];
    platforms.push_back(platform["os"].get<std::string>() + "/" + platform["architecture"].get<std::string>() +
                        (platform.contains("variant") ? "/" + platform["variant"].get<std::string>() : ""));
    if (entry.contains("annotations")) attested = entry["annotations"].value("vnd.docker.reference.digest", "");
  }
  EXPECT_EQ(platforms, (std::vector<std::string>{"linux/amd64", "linux/arm64/v8", "linux/arm/v7", "unknown/unknown"}));
  EXPECT_EQ(attested, index["manifests"][0]["digest"]);
}

TEST(RegistryToken, AnswersWithABearerChallengeWithoutAToken) {
  const auto& registry = test_registry();
  const auto root = http_get("https://" + registry.token + "/v2/");
  EXPECT_EQ(root.status, 401);
  EXPECT_EQ(header(root, "WWW-Authenticate"),
            "Bearer realm=\"" + registry.auth_realm + "\",service=\"" + registry.service + "\"");
  const auto manifest = http_get(manifest_url(registry.token, "public/busybox", "latest"), {accept_manifests()});
  EXPECT_EQ(manifest.status, 401);
  EXPECT_NE(header(manifest, "WWW-Authenticate").find("scope=\"repository:public/busybox:pull\""), std::string::npos)
      << manifest.headers;
}

TEST(RegistryToken, AnonymousTokensCoverPublicRepositoriesOnly) {
  const auto& registry = test_registry();
  const auto granted = http_get(token_url("public/busybox"));
  ASSERT_EQ(granted.status, 200) << granted.body;
  const auto json = nlohmann::json::parse(granted.body);
  EXPECT_EQ(json["token"], json["access_token"]);
  EXPECT_GE(json["expires_in"].get<int>(), 60);
  const auto manifest = http_get(manifest_url(registry.token, "public/busybox", "latest"),
                                 {accept_manifests(), "Authorization: Bearer " + token_from(granted)});
  EXPECT_EQ(manifest.status, 200) << manifest.body;
  // The token is for public/busybox only.
  const auto other = http_get(manifest_url(registry.token, "private/busybox", "latest"),
                              {accept_manifests(), "Authorization: Bearer " + token_from(granted)});
  EXPECT_EQ(other.status, 401);

  EXPECT_EQ(http_get(token_url("private/busybox")).status, 401);
}

TEST(RegistryToken, OauthtokenWithTheApiKeyPullsPrivateRepositories) {
  const auto& registry = test_registry();
  const auto granted = http_get(token_url("private/busybox"), {}, credentials_config("$oauthtoken", registry.api_key));
  ASSERT_EQ(granted.status, 200) << granted.body;
  const auto manifest = http_get(manifest_url(registry.token, "private/busybox", "latest"),
                                 {accept_manifests(), "Authorization: Bearer " + token_from(granted)});
  EXPECT_EQ(manifest.status, 200) << manifest.body;
  EXPECT_EQ(header(manifest, "Docker-Content-Digest"), "sha256:" + sha256_hex(manifest.body));
  // The nvcr.io form of the request names the account too.
  EXPECT_EQ(http_get(token_url("private/busybox") + "&account=$oauthtoken", {},
                     credentials_config("$oauthtoken", registry.api_key)).status, 200);
}

TEST(RegistryToken, WrongKeyOrUserIsRefused) {
  const auto& registry = test_registry();
  EXPECT_EQ(http_get(token_url("private/busybox"), {}, credentials_config("$oauthtoken", "nvapi-wrong")).status, 401);
  EXPECT_EQ(http_get(token_url("public/busybox"), {}, credentials_config("$oauthtoken", "nvapi-wrong")).status, 401);
  EXPECT_EQ(http_get(token_url("private/busybox"), {}, credentials_config("someone", registry.api_key)).status, 401);
  // A forged token (right claims, wrong signature) is refused by the registry.
  const auto granted = http_get(token_url("public/busybox"));
  auto forged = token_from(granted);
  ASSERT_FALSE(forged.empty());
  // A character inside the signature: the last one partly encodes padding bits only.
  char& flipped = forged[forged.size() - 10];
  flipped = flipped == 'A' ? 'B' : 'A';
  EXPECT_EQ(http_get(manifest_url(registry.token, "public/busybox", "latest"),
                     {accept_manifests(), "Authorization: Bearer " + forged}).status, 401);
}

TEST(RegistryToken, ShortLivedTokensExpireAtTheRegistry) {
  const auto& registry = test_registry();
  const auto granted = http_get(token_url("private/busybox") + "&expires_in=1", {},
                                credentials_config("short-lived", registry.api_key));
  ASSERT_EQ(granted.status, 200) << granted.body;
  EXPECT_EQ(nlohmann::json::parse(granted.body)["expires_in"], 1);
  ::sleep(3);  // past the expiry; the assertion holds however slow the machine is
  const auto manifest = http_get(manifest_url(registry.token, "private/busybox", "latest"),
                                 {accept_manifests(), "Authorization: Bearer " + token_from(granted)});
  EXPECT_EQ(manifest.status, 401);
}

TEST(RegistryToken, RefreshAccountsGetAnExpiredFirstTokenThenAGoodOne) {
  const auto& registry = test_registry();
  // A fresh account name per run: the "first token" is remembered per account and scope.
  const std::string account = "refresh-" + std::to_string(::getpid()) + "-" + std::to_string(::time(nullptr));
  auto pull_with_new_token = [&] {
    const auto granted = http_get(token_url("private/busybox"), {}, credentials_config(account, registry.api_key));
    EXPECT_EQ(granted.status, 200) << granted.body;
    EXPECT_GE(nlohmann::json::parse(granted.body)["expires_in"].get<int>(), 60);  // it does not say
    return http_get(manifest_url(registry.token, "private/busybox", "latest"),
                    {accept_manifests(), "Authorization: Bearer " + token_from(granted)})
        .status;
  };
  EXPECT_EQ(pull_with_new_token(), 401);
  EXPECT_EQ(pull_with_new_token(), 200);
}

TEST(RegistryBasic, ChallengesAndChecksThePassword) {
  const auto& registry = test_registry();
  const auto anonymous = http_get("https://" + registry.basic + "/v2/");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_EQ(header(anonymous, "WWW-Authenticate"), "Basic realm=\"capsa-test-basic\"");
  EXPECT_EQ(http_get("https://" + registry.basic + "/v2/", {}, credentials_config(registry.basic_user, "wrong")).status,
            401);
  // The password holds a ':'; Basic credentials split at the first one.
  EXPECT_NE(registry.basic_password.find(':'), std::string::npos);
  const auto manifest = http_get(manifest_url(registry.basic, "private/layers", "1.0"), {accept_manifests()},
                                 credentials_config(registry.basic_user, registry.basic_password));
  EXPECT_EQ(manifest.status, 200) << manifest.body;
}

TEST(RegistrySecrets, ApiKeyAndPasswordAreOnNoCommandLineAndInNoLog) {
  const auto& registry = test_registry();
  ASSERT_FALSE(registry.api_key.empty());
  ASSERT_FALSE(registry.basic_password.empty());
  // Use both secrets first, so that the logs have had the chance to record them.
  http_get(token_url("private/busybox"), {}, credentials_config("$oauthtoken", registry.api_key));
  http_get("https://" + registry.basic + "/v2/", {}, credentials_config(registry.basic_user, registry.basic_password));
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    const std::string argv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(argv.find(registry.api_key), std::string::npos) << entry.path();
    EXPECT_EQ(argv.find(registry.basic_password), std::string::npos) << entry.path();
  }
  const std::string state = std::getenv("CAPSA_TEST_REGISTRY_STATE");
  for (const char* log : {"plain.log", "token.log", "auth.log", "basic.log"}) {
    const auto text = read_file(state + "/" + log);
    EXPECT_FALSE(text.empty()) << log;
    EXPECT_EQ(text.find(registry.api_key), std::string::npos) << log;
    EXPECT_EQ(text.find(registry.basic_password), std::string::npos) << log;
  }
}

TEST(RegistryServers, StartingAgainReusesTheRunningServers) {
  if (::geteuid() != 0) GTEST_SKIP() << "the state folder belongs to root";
  const std::string state = std::getenv("CAPSA_TEST_REGISTRY_STATE");
  auto pids = [&] {
    std::string all;
    for (const char* name : {"plain", "token", "auth", "basic"}) all += read_file(state + "/" + name + ".pid");
    return all;
  };
  auto port = [](const std::string& host_port) { return host_port.substr(host_port.rfind(':') + 1); };
  const auto& registry = test_registry();
  const auto auth_port = registry.auth_realm.substr(registry.auth_realm.rfind(':') + 1,
                                                    registry.auth_realm.rfind('/') - registry.auth_realm.rfind(':') - 1);
  const auto before = pids();
  const auto again = run_process({"env", "CAPSA_TEST_REGISTRY_PLAIN_PORT=" + port(registry.plain),
                                  "CAPSA_TEST_REGISTRY_TOKEN_PORT=" + port(registry.token),
                                  "CAPSA_TEST_REGISTRY_AUTH_PORT=" + auth_port,
                                  "CAPSA_TEST_REGISTRY_BASIC_PORT=" + port(registry.basic),
                                  registry.tools + "/start.sh", state});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("reusing"), std::string::npos) << again.out;
  EXPECT_EQ(pids(), before);
}

}  // namespace
}  // namespace capsa::test
