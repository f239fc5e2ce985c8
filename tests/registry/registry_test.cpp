// The test registries themselves (tests/registry/start.sh): what every pull test relies
// on. Talks to the real servers with the curl CLI; secrets go to curl on stdin (-K -).
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::test {
namespace {

constexpr const char* kOciManifest = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kOciIndex = "application/vnd.oci.image.index.v1+json";

struct Response {
  int status = 0;
  std::string headers;  // of the last response
  std::string body;
};

// One request with curl. `config` is a curl config (e.g. `user = "u:p"`) given on stdin,
// so that credentials never appear on a command line.
Response http_get(const std::string& url, const std::vector<std::string>& headers = {},
                  const std::string& config = "") {
  TempDir dir;
  std::vector<std::string> argv = {"curl", "-sS", "--max-time", "30", "-K", "-", "--cacert",
                                   test_registry().ca_file, "-D", dir / "headers", "-o", dir / "body",
                                   "-w", "%{http_code}"};
  for (const auto& header : headers) {
    argv.push_back("-H");
    argv.push_back(header);
  }
  argv.push_back(url);
  const auto result = run_process(argv, config);
  EXPECT_EQ(result.exit_code, 0) << "curl " << url << ": " << result.err;
  Response response;
  response.status = std::atoi(result.out.c_str());
  response.headers = read_file(dir / "headers");
  // Only the last response's headers count (curl writes every response, e.g. after 100).
  const auto last = response.headers.rfind("HTTP/");
  if (last != std::string::npos) response.headers.erase(0, last);
  response.body = read_file(dir / "body");
  return response;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The value of header `name` (case-insensitive), without the trailing CR; "" if absent.
std::string header(const Response& response, const std::string& name) {
  std::istringstream lines(response.headers);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon != std::string::npos && lower(line.substr(0, colon)) == lower(name))
      return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "";
}

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

std::string credentials_config(const std::string& user, const std::string& password) {
  return "user = \"" + user + ":" + password + "\"\n";
}

std::string token_url(const std::string& repository) {
  return test_registry().auth_realm + "?service=" + test_registry().service + "&scope=repository:" +
         repository + ":pull";
}

std::string manifest_url(const std::string& host, const std::string& repository, const std::string& ref,
                         const char* scheme = "https") {
  return std::string(scheme) + "://" + host + "/v2/" + repository + "/manifests/" + ref;
}

std::string accept_manifests() { return std::string("Accept: ") + kOciManifest + ", " + kOciIndex; }

std::string token_from(const Response& response) {
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

// ---- the reference unpack of the `layers` image ---------------------------------------

std::string line(const std::string& path, const std::string& type, const std::string& mode, int uid, int gid,
                 const std::string& content, int links = 1) {
  std::ostringstream out;
  out << path << '\t' << type << '\t' << mode << '\t' << uid << '\t' << gid << '\t';
  if (type == "file")
    out << content.size() << '\t' << sha256_hex(content) << "\t-\t" << links;
  else
    out << "-\t-\t" << (content.empty() ? "-" : content) << '\t' << (type == "dir" ? "-" : std::to_string(links));
  return out.str();
}

class LayersReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0 || !have_program("umoci")) return;
    dir_ = new TempDir();
    const auto unpack = run_process({test_registry().tools + "/umoci-unpack.sh",
                                     built_fixtures() + "/oci-layers", "latest", *dir_ / "bundle"});
    ASSERT_EQ(unpack.exit_code, 0) << unpack.err;
    const auto listing = run_process({test_registry().tools + "/tree-manifest.py", *dir_ / "bundle/rootfs"});
    ASSERT_EQ(listing.exit_code, 0) << listing.err;
    std::istringstream in(listing.out);
    std::string entry;
    lines_ = new std::vector<std::string>();
    while (std::getline(in, entry)) lines_->push_back(entry);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete lines_;
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "umoci reproduces exact ownership only as root";
    if (lines_ == nullptr) GTEST_SKIP() << "umoci is not installed";
  }
  bool has(const std::string& expected) const {
    return std::find(lines_->begin(), lines_->end(), expected) != lines_->end();
  }
  std::vector<std::string> paths_under(const std::string& prefix) const {
    std::vector<std::string> paths;
    for (const auto& entry : *lines_)
      if (entry.rfind(prefix, 0) == 0) paths.push_back(entry.substr(0, entry.find('\t')));
    return paths;
  }
  static inline TempDir* dir_ = nullptr;
  static inline std::vector<std::string>* lines_ = nullptr;
};

TEST_F(LayersReference, WhiteoutsDeleteLowerLayersAndNeverShow) {
  EXPECT_TRUE(has(line("deleteme", "file", "0644", 0, 0, "recreated\n")));
  EXPECT_TRUE(paths_under("deldir").empty());
  EXPECT_TRUE(paths_under("never-existed").empty());
  EXPECT_TRUE(has(line("samelayer", "file", "0644", 0, 0, "layer3\n")));
  for (const auto& entry : *lines_) EXPECT_EQ(entry.find(".wh."), std::string::npos) << entry;
}

TEST_F(LayersReference, OpaqueDirectoryKeepsOnlyItsOwnLayer) {
  EXPECT_EQ(paths_under("opaque"), (std::vector<std::string>{"opaque", "opaque/new"}));
}

TEST_F(LayersReference, ReplacementsUnlinkAndRecreate) {
  EXPECT_EQ(paths_under("dir2file"), (std::vector<std::string>{"dir2file", "dir2file/again"}));
  EXPECT_TRUE(has(line("dir2file", "dir", "0755", 0, 0, "")));
  EXPECT_TRUE(has(line("file2dir/child", "file", "0644", 0, 0, "child\n")));
  EXPECT_TRUE(has(line("link-swap", "dir", "0755", 0, 0, "")));
  EXPECT_TRUE(has(line("etc/hostname", "file", "0600", 0, 0, "replaced\n")));
  EXPECT_TRUE(has(line("dup", "file", "0644", 0, 0, "second\n")));
}

TEST_F(LayersReference, HardlinksWithinAndAcrossLayers) {
  EXPECT_TRUE(has(line("hl/original", "file", "0644", 0, 0, "original content\n", 2)));
  EXPECT_TRUE(has(line("hl/cross-layer", "file", "0644", 0, 0, "original content\n", 2)));
  EXPECT_TRUE(paths_under("hl/same-layer").empty());
  EXPECT_TRUE(has(line("hl/to-replace", "file", "0644", 0, 0, "new target\n")));
  EXPECT_TRUE(has(line("hl/to-replace-link", "file", "0644", 0, 0, "old target\n")));
}

TEST_F(LayersReference, ModesOwnersAndSpecialFiles) {
  EXPECT_TRUE(has(line("owned", "dir", "0755", 4321, 8765, "")));
  EXPECT_TRUE(has(line("owned/data", "file", "0640", 1234, 5678, "owned by 1234:5678\n")));
  EXPECT_TRUE(has(line("owned/big-ids", "file", "0644", 3000000, 3000001, "ids beyond the ustar octal fields\n")));
  EXPECT_TRUE(has(line("bin/suid-tool", "file", "4755", 0, 0, "setuid\n")));
  EXPECT_TRUE(has(line("bin/sgid-tool", "file", "2755", 0, 42, "setgid\n")));
  EXPECT_TRUE(has(line("shared", "dir", "2775", 0, 100, "")));
  EXPECT_TRUE(has(line("tmp", "dir", "1777", 0, 0, "")));
  EXPECT_TRUE(has(line("secret", "file", "0000", 0, 0, "unreadable\n")));
  EXPECT_TRUE(has(line("dev/null", "char", "0666", 0, 0, "1,3")));
  EXPECT_TRUE(has(line("empty-dir", "dir", "0755", 0, 0, "")));
}

TEST_F(LayersReference, LongNamesFromPaxAndGnuHeaders) {
  const std::string b(200, 'b');
  EXPECT_TRUE(has(line("long/" + std::string(120, 'a'), "file", "0644", 0, 0, "name over 100 bytes\n")));
  EXPECT_TRUE(has(line("long/" + b + "/" + std::string(100, 'c'), "file", "0644", 0, 0, "path over 255 bytes\n")));
  EXPECT_TRUE(has(line("gnu/" + std::string(150, 'g'), "file", "0644", 0, 0, "GNU long name\n")));
  EXPECT_TRUE(has(line("utf8/caf\xc3\xa9-\xc3\xbc.txt", "file", "0644", 0, 0, "non-ASCII name\n")));
}

}  // namespace
}  // namespace capsa::test
