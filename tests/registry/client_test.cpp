// Manifests and authentication against the project's test registries.
#include "registry/client.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "oci/digest.hpp"
#include "oci/media_types.hpp"
#include "registry/helpers.hpp"

namespace capsa::registry {
namespace {

TEST(Manifests, AllFourTypesByTagAndDigestWithExactBytes) {
  REQUIRE_TESTBED();
  Logged logged(true);
  RegistryClient client(bed->registries.plain, logged.options);
  const auto& image = bed->public_image;
  auto oci = client.get_manifest(image.repository, "oci");
  EXPECT_EQ(oci.media_type, oci::media_type::kOciManifest);
  EXPECT_EQ(oci.digest, image.oci_digest);
  EXPECT_EQ(oci::Digest::sha256_of(oci.bytes).to_string(), image.oci_digest);  // multi-line JSON hashed as sent
  EXPECT_NE(oci.bytes.find('\n'), std::string::npos);
  EXPECT_EQ(client.get_manifest(image.repository, "docker").media_type, oci::media_type::kDockerManifest);
  auto index = client.get_manifest(image.repository, "index");
  EXPECT_EQ(index.media_type, oci::media_type::kOciIndex);
  EXPECT_EQ(index.digest, image.index_digest);
  auto by_digest = client.get_manifest(image.repository, image.docker_digest);
  EXPECT_EQ(by_digest.digest, image.docker_digest);
  EXPECT_EQ(client.head_manifest(image.repository, "oci"), image.oci_digest);
  EXPECT_EQ(client.head_manifest(image.repository, "index"), image.index_digest);
}

TEST(Manifests, UnknownTagAndRepositoryAreNotFound) {
  REQUIRE_TESTBED();
  Logged logged(true);
  RegistryClient client(bed->registries.plain, logged.options);
  auto tag = error_of([&] { client.get_manifest(bed->public_image.repository, "no-such-tag"); });
  EXPECT_EQ(tag.kind(), ErrorKind::kNotFound);
  EXPECT_NE(std::string(tag.what()).find("manifest " + bed->public_image.repository + ":no-such-tag not found in " +
                                         bed->registries.plain),
            std::string::npos) << tag.what();
  EXPECT_NE(std::string(tag.what()).find("MANIFEST_UNKNOWN"), std::string::npos) << tag.what();
  auto repo = error_of([&] { client.head_manifest("public/never-pushed", "latest"); });
  EXPECT_EQ(repo.kind(), ErrorKind::kNotFound);
}

TEST(Manifests, UnsupportedMediaTypesAreRejected) {
  REQUIRE_TESTBED();
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  bed->proxy.configure({{"manifest_content_type", "application/vnd.docker.distribution.manifest.v1+prettyjws"}});
  auto schema1 = error_of([&] { client.get_manifest(bed->public_image.repository, "oci"); });
  EXPECT_EQ(schema1.kind(), ErrorKind::kUnsupportedMediaType);
  EXPECT_NE(std::string(schema1.what()).find("schema 1"), std::string::npos);
  bed->proxy.configure({{"manifest_content_type", "text/html"}});
  auto html = error_of([&] { client.get_manifest(bed->public_image.repository, "oci"); });
  EXPECT_EQ(html.kind(), ErrorKind::kUnsupportedMediaType);
  EXPECT_NE(std::string(html.what()).find("'text/html'"), std::string::npos);
  bed->proxy.configure({});
}

TEST(Manifests, ExactAcceptHeaderAndTamperedBytesAreRejected) {
  REQUIRE_TESTBED();
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  const auto& image = bed->public_image;
  bed->proxy.configure({});
  client.get_manifest(image.repository, "index");
  ASSERT_EQ(bed->proxy.requests().size(), 1u);
  EXPECT_EQ(bed->proxy.requests()[0]["accept"],
            "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, "
            "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json");

  bed->proxy.configure({{"corrupt_manifest", true}});
  auto by_digest = error_of([&] { client.get_manifest(image.repository, image.oci_digest); });
  EXPECT_EQ(by_digest.kind(), ErrorKind::kDigestMismatch);
  EXPECT_NE(std::string(by_digest.what()).find("the registry sent other content than asked for"), std::string::npos);
  // By tag, the bytes no longer match the registry's own Docker-Content-Digest.
  auto by_tag = error_of([&] { client.get_manifest(image.repository, "oci"); });
  EXPECT_EQ(by_tag.kind(), ErrorKind::kDigestMismatch);
  EXPECT_NE(std::string(by_tag.what()).find("but the registry says " + image.oci_digest), std::string::npos)
      << by_tag.what();
  bed->proxy.configure({});
}

TEST(TokenAuth, IdentityTokenIsExchangedWithTheRefreshTokenGrant) {
  REQUIRE_TESTBED();
  Logged logged(true);
  const std::string refresh = "refresh-IDENTITY-SECRET";
  bed->proxy.configure({{"bearer", {{"refresh_token", refresh}}}});
  RegistryClient client(bed->proxy.front(), logged.options, Credentials{"", "", refresh, "~/.docker/config.json"});
  EXPECT_EQ(client.head_manifest(bed->public_image.repository, "oci"), bed->public_image.oci_digest);
  bool posted = false;
  for (const auto& request : bed->proxy.requests()) {
    EXPECT_EQ(request["path"].get<std::string>().find(refresh), std::string::npos);  // never in a URL
    posted |= request["method"] == "POST" && request["status"] == 200;
  }
  EXPECT_TRUE(posted);

  RegistryClient wrong(bed->proxy.front(), logged.options, Credentials{"", "", "stale-" + refresh, "~/.docker/config.json"});
  auto error = error_of([&] { wrong.head_manifest(bed->public_image.repository, "oci"); });
  EXPECT_EQ(error.kind(), ErrorKind::kUnauthorized);
  EXPECT_EQ(std::string(error.what()).find(refresh), std::string::npos);
  bed->proxy.configure({});
}

TEST(TokenAuth, AnonymousPullOfPublicRepository) {
  REQUIRE_TESTBED();
  Logged logged = tls_options(*bed);
  RegistryClient client(bed->registries.token, logged.options);
  EXPECT_EQ(client.get_manifest(bed->public_image.repository, "oci").digest, bed->public_image.oci_digest);
  EXPECT_EQ(client.authenticator().tokens_fetched(), 1);
  // The token is cached for the scope: a second request needs none.
  EXPECT_EQ(client.head_manifest(bed->public_image.repository, "docker"), bed->public_image.docker_digest);
  EXPECT_EQ(client.authenticator().tokens_fetched(), 1);
}

TEST(TokenAuth, PrivateRepositoryNeedsTheApiKeyAndErrorsNeverShowIt) {
  REQUIRE_TESTBED();
  const auto& image = bed->private_image;
  Logged logged = tls_options(*bed);
  {
    RegistryClient anonymous(bed->registries.token, logged.options);
    auto error = error_of([&] { anonymous.get_manifest(image.repository, "oci"); });
    EXPECT_EQ(error.kind(), ErrorKind::kUnauthorized);
    EXPECT_NE(std::string(error.what()).find("401 Unauthorized from " + bed->registries.token + " for " +
                                             image.repository + ": the repository does not exist or needs credentials"),
              std::string::npos) << error.what();
  }
  {
    const std::string wrong_key = "nvapi-WRONG-" + bed->registries.api_key;
    RegistryClient wrong(bed->registries.token, logged.options, ngc("$oauthtoken", wrong_key));
    auto error = error_of([&] { wrong.get_manifest(image.repository, "oci"); });
    EXPECT_EQ(error.kind(), ErrorKind::kUnauthorized);
    const std::string message = error.what();
    EXPECT_NE(message.find("401 Unauthorized from " + bed->registries.token + " for " + image.repository +
                           ": check the username/password"),
              std::string::npos) << message;
    EXPECT_NE(message.find("SINGULARITY_DOCKER_USERNAME"), std::string::npos);
    EXPECT_EQ(message.find(wrong_key), std::string::npos);
    EXPECT_EQ(message.find(bed->registries.api_key), std::string::npos);
  }
  RegistryClient client(bed->registries.token, logged.options, ngc("$oauthtoken", bed->registries.api_key));
  auto manifest = client.get_manifest(image.repository, "oci");
  EXPECT_EQ(manifest.digest, image.oci_digest);
  EXPECT_EQ(logged.all().find(bed->registries.api_key), std::string::npos);
}

TEST(TokenAuth, ExpiredTokenIsRenewedBeforeTheNextRequest) {
  REQUIRE_TESTBED();
  Logged logged = tls_options(*bed);
  // `short-lived` tokens are honoured by the registry for 3 s only.
  RegistryClient client(bed->registries.token, logged.options, ngc("short-lived", bed->registries.api_key));
  const auto& image = bed->private_image;
  EXPECT_EQ(client.head_manifest(image.repository, "oci"), image.oci_digest);
  EXPECT_EQ(client.authenticator().tokens_fetched(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(3200));
  EXPECT_EQ(client.head_manifest(image.repository, "docker"), image.docker_digest);
  EXPECT_EQ(client.authenticator().tokens_fetched(), 2);
}

TEST(TokenAuth, TokenRejectedMidPullIsRenewedAndTheRequestRetriedOnce) {
  REQUIRE_TESTBED();
  Logged logged(true);
  // The proxy hands out tokens at its own realm and refuses each after two uses, the way a
  // registry refuses a token that expired during a long layer download.
  bed->proxy.configure({{"bearer", {{"expires_in", 300}, {"reject_after_uses", 2}}}});
  RegistryClient client(bed->proxy.front(), logged.options);
  const auto& image = bed->public_image;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(client.head_manifest(image.repository, "oci"), image.oci_digest);
  EXPECT_EQ(client.authenticator().tokens_fetched(), 2);
  int unauthorized = 0;
  for (const auto& request : bed->proxy.requests()) unauthorized += request["status"] == 401;
  EXPECT_EQ(unauthorized, 2);  // the first challenge, then the refused token
}

TEST(BasicAuth, TlsRegistryWithHtpasswd) {
  REQUIRE_TESTBED();
  Logged logged = tls_options(*bed);
  const auto& image = bed->private_image;
  RegistryClient good(bed->registries.basic, logged.options,
                      Credentials{bed->registries.basic_user, bed->registries.basic_password, "", "the test"});
  EXPECT_EQ(good.get_manifest(image.repository, "oci").digest, image.oci_digest);
  EXPECT_EQ(good.authenticator().tokens_fetched(), 0);

  const std::string wrong_password = bed->registries.basic_password + "-WRONG";
  RegistryClient bad(bed->registries.basic, logged.options,
                     Credentials{bed->registries.basic_user, wrong_password, "", "APPTAINER_DOCKER_USERNAME/APPTAINER_DOCKER_PASSWORD"});
  auto error = error_of([&] { bad.get_manifest(image.repository, "oci"); });
  EXPECT_EQ(error.kind(), ErrorKind::kUnauthorized);
  const std::string message = error.what();
  EXPECT_NE(message.find("401 Unauthorized from " + bed->registries.basic), std::string::npos) << message;
  EXPECT_NE(message.find("APPTAINER_DOCKER_USERNAME/APPTAINER_DOCKER_PASSWORD"), std::string::npos);
  EXPECT_EQ(message.find(wrong_password), std::string::npos);
  EXPECT_EQ(logged.all().find(bed->registries.basic_password), std::string::npos);

  RegistryClient anonymous(bed->registries.basic, logged.options);
  EXPECT_EQ(error_of([&] { anonymous.head_manifest(image.repository, "oci"); }).kind(), ErrorKind::kUnauthorized);
}

TEST(Tls, UnknownCaIsAClearErrorAndCapsaRegistryCaFixesIt) {
  REQUIRE_TESTBED();
  Logged logged(false);
  RegistryClient untrusted(bed->registries.token, logged.options);
  auto error = error_of([&] { untrusted.get_manifest(bed->public_image.repository, "oci"); });
  EXPECT_EQ(error.kind(), ErrorKind::kTls);
  EXPECT_NE(std::string(error.what()).find("TLS failure talking to " + bed->registries.token), std::string::npos)
      << error.what();
  EXPECT_NE(std::string(error.what()).find("CAPSA_REGISTRY_CA"), std::string::npos);

  auto options = options_from_environment([&](const std::string& name) -> std::optional<std::string> {
    if (name == "CAPSA_REGISTRY_CA") return bed->registries.ca_file;
    return std::nullopt;
  });
  RegistryClient trusted(bed->registries.token, options);
  EXPECT_EQ(trusted.head_manifest(bed->public_image.repository, "oci"), bed->public_image.oci_digest);
}

TEST(Network, PlainHttpOnlyWhenAskedAndUnreachableRegistry) {
  REQUIRE_TESTBED();
  Logged https(false);
  RegistryClient wrong_scheme(bed->registries.plain, https.options);
  EXPECT_EQ(error_of([&] { wrong_scheme.head_manifest(bed->public_image.repository, "oci"); }).kind(), ErrorKind::kTls);

  Logged logged(true);
  logged.options.max_retries = 1;
  RegistryClient closed("127.0.0.1:1", logged.options);
  auto error = error_of([&] { closed.get_manifest("public/x", "latest"); });
  EXPECT_EQ(error.kind(), ErrorKind::kUnreachable);
  EXPECT_NE(std::string(error.what()).find("registry 127.0.0.1:1 is unreachable"), std::string::npos) << error.what();
  RegistryClient unresolvable("no-such-host.invalid", logged.options);
  EXPECT_EQ(error_of([&] { unresolvable.head_manifest("x", "latest"); }).kind(), ErrorKind::kUnreachable);
}

TEST(Retries, RateLimitWithRetryAfterAndServerErrorsThenSuccessOrAClearError) {
  REQUIRE_TESTBED();
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  const auto& image = bed->public_image;
  bed->proxy.configure({{"fail", {{"status", 429}, {"count", 1}, {"retry_after", "1"}}}});
  EXPECT_EQ(client.get_manifest(image.repository, "oci").digest, image.oci_digest);
  ASSERT_EQ(logged.lines->size(), 1u);
  EXPECT_NE(logged.lines->at(0).find("HTTP 429"), std::string::npos);
  EXPECT_NE(logged.lines->at(0).find("retrying in 1000 ms"), std::string::npos) << logged.lines->at(0);

  bed->proxy.configure({{"fail", {{"status", 503}, {"count", 2}}}});
  EXPECT_EQ(client.head_manifest(image.repository, "oci"), image.oci_digest);
  EXPECT_EQ(bed->proxy.requests().size(), 3u);

  bed->proxy.configure({{"fail", {{"status", 500}, {"count", 100}}}});
  auto error = error_of([&] { client.get_manifest(image.repository, "oci"); });
  EXPECT_EQ(error.kind(), ErrorKind::kServer);
  EXPECT_NE(std::string(error.what()).find("HTTP 500"), std::string::npos);
  EXPECT_EQ(bed->proxy.requests().size(), 1u + static_cast<size_t>(logged.options.max_retries));

  bed->proxy.configure({{"fail", {{"status", 429}, {"count", 1}, {"retry_after", "86400"}}}});
  auto patience = error_of([&] { client.get_manifest(image.repository, "oci"); });
  EXPECT_NE(std::string(patience.what()).find("retry after 86400 s"), std::string::npos) << patience.what();
  bed->proxy.configure({});
}

}  // namespace
}  // namespace capsa::registry
