// Indexes and manifests parsed from the bytes a registry sends, and every way such a
// document can be wrong giving one line that names the field.
#include "oci/manifest.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "oci/media_types.hpp"
#include "sample_documents.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

using namespace std::string_literals;
namespace mt = media_type;

// The message of the FormatError `body` throws; fails the test when it throws nothing.
template <typename Body>
std::string format_error_of(Body&& body) {
  try {
    body();
  } catch (const FormatError& e) {
    std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "no FormatError";
  return "";
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Manifest, DockerManifestListGivesEveryPlatformInOrder) {
  Index index = parse_index(samples::kDockerManifestList, "application/vnd.docker.distribution.manifest.list.v2+json");
  EXPECT_EQ(index.media_type, mt::kDockerManifestList);
  ASSERT_EQ(index.manifests.size(), 5u);
  std::vector<std::string> platforms;
  for (const auto& entry : index.manifests) platforms.push_back(entry.platform->to_string());
  EXPECT_EQ(platforms, (std::vector<std::string>{"linux/amd64", "linux/arm/v7", "linux/arm64/v8", "linux/ppc64le",
                                                 "linux/s390x"}));
  EXPECT_EQ(index.manifests[0].media_type, mt::kDockerManifest);
  EXPECT_EQ(index.manifests[0].size, 529);
  EXPECT_EQ(index.manifests[0].digest.to_string(),
            "sha256:77cd300ffdf16f18318d6059f680f509a8b4572bfd4bfff182497390575a108e");
}

TEST(Manifest, OciIndexKeepsAttestationEntriesWithTheirAnnotations) {
  Index index = parse_index(samples::kOciIndexWithAttestations, mt::kOciIndex);
  ASSERT_EQ(index.manifests.size(), 4u);
  EXPECT_EQ(index.manifests[2].platform->to_string(), "unknown/unknown");
  EXPECT_EQ(index.manifests[2].annotations.at("vnd.docker.reference.type"), "attestation-manifest");
}

TEST(Manifest, OciManifestGivesConfigAndLayersInStackOrder) {
  Manifest m = parse_manifest(samples::kOciManifest, "application/vnd.oci.image.manifest.v1+json");
  EXPECT_EQ(m.media_type, mt::kOciManifest);
  EXPECT_EQ(m.config.media_type, mt::kOciConfig);
  EXPECT_EQ(m.config.size, 1470);
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_EQ(layer_compression(m.layers[0].media_type), Compression::Gzip);
  EXPECT_EQ(layer_compression(m.layers[1].media_type), Compression::Zstd);
  EXPECT_EQ(layer_compression(m.layers[2].media_type), Compression::None);
  EXPECT_EQ(m.layers[0].size, 29534055);
  EXPECT_EQ(m.layers[2].size, 0);
  EXPECT_EQ(m.layers[2].annotations.at("org.opencontainers.image.title"), "empty.tar");
  EXPECT_EQ(m.annotations.at("org.opencontainers.image.base.name"), "docker.io/library/debian:bookworm-slim");
}

TEST(Manifest, DockerSchema2KeepsForeignLayerUrls) {
  Manifest m = parse_manifest(samples::kDockerManifest, "application/vnd.docker.distribution.manifest.v2+json");
  EXPECT_EQ(m.config.media_type, mt::kDockerConfig);
  ASSERT_EQ(m.layers.size(), 2u);
  ASSERT_EQ(m.layers[0].urls.size(), 1u);
  EXPECT_EQ(m.layers[0].urls[0].rfind("https://mcr.microsoft.com/", 0), 0u);
  EXPECT_EQ(layer_compression(m.layers[1].media_type), Compression::Gzip);
}

TEST(Manifest, ContentTypeParametersAndCaseAreIgnored) {
  EXPECT_NO_THROW(parse_manifest(samples::kOciManifest, "Application/VND.OCI.image.manifest.v1+json; charset=utf-8"));
}

TEST(Manifest, SameLayerTwiceIsAllowed) {
  std::string doc = replace(std::string(samples::kDockerManifest),
                            "sha256:656771905e1ef731f65cd0a0d9fb061238380a1a012e6abdf846ecc7d2ea36fd\",",
                            "sha256:922badbaf192e1a4a5af64df422de6d73e96e70d0ab52245bd3d692bcea9cfad\",");
  Manifest m = parse_manifest(doc, mt::kDockerManifest);
  EXPECT_EQ(m.layers[0].digest, m.layers[1].digest);
}

TEST(Manifest, FormattingDoesNotChangeTheParseButChangesTheDigest) {
  // Why the bytes are hashed as received, never re-serialised (sarus #32).
  std::string compact = nlohmann::json::parse(samples::kOciManifest).dump();
  Manifest pretty = parse_manifest(samples::kOciManifest, mt::kOciManifest);
  Manifest dense = parse_manifest(compact, mt::kOciManifest);
  EXPECT_EQ(pretty.layers.size(), dense.layers.size());
  EXPECT_EQ(pretty.config.digest, dense.config.digest);
  EXPECT_NE(Digest::sha256_of(samples::kOciManifest), Digest::sha256_of(compact));
  EXPECT_TRUE(Digest::sha256_of(compact).matches(compact));
}

TEST(Manifest, FetchedContentIsVerifiedAgainstItsDescriptor) {
  const std::string config = R"({"rootfs":{"type":"layers","diff_ids":[]}})";
  Descriptor d{std::string(mt::kOciConfig),
               Digest::sha256_of(config),
               static_cast<std::int64_t>(config.size()),
               std::nullopt,
               {},
               {}};
  EXPECT_NO_THROW(verify_content(d, config));
  std::string tampered = config;
  tampered[2] = 'R';
  EXPECT_EQ(format_error_of([&] { verify_content(d, tampered); }),
            "digest mismatch: expected " + d.digest.to_string() + ", got " + Digest::sha256_of(tampered).to_string());
  EXPECT_EQ(format_error_of([&] { verify_content(d, config + "\n"); }),
            "size mismatch: expected 42 bytes for " + d.digest.to_string() + ", got 43");
}

TEST(Manifest, MediaTypeFieldMustEqualContentType) {
  auto message = format_error_of([] { parse_manifest(samples::kDockerManifest, mt::kOciManifest); });
  EXPECT_EQ(message,
            "image manifest: mediaType \"application/vnd.docker.distribution.manifest.v2+json\" does not match "
            "the Content-Type \"application/vnd.oci.image.manifest.v1+json\"");
  message = format_error_of([] { parse_index(samples::kDockerManifestList, mt::kOciIndex); });
  EXPECT_NE(message.find("does not match the Content-Type"), std::string::npos) << message;
}

TEST(Manifest, GenericContentTypeFallsBackToTheDocument) {
  EXPECT_EQ(parse_manifest(samples::kDockerManifest, "application/json").media_type, mt::kDockerManifest);
  EXPECT_EQ(parse_index(samples::kDockerManifestList, "").media_type, mt::kDockerManifestList);
  // No mediaType field and no telling Content-Type: OCI, the spec's default.
  std::string no_type =
      replace(std::string(samples::kOciManifest), "\"mediaType\": \"application/vnd.oci.image.manifest.v1+json\",", "");
  EXPECT_EQ(parse_manifest(no_type, "application/octet-stream").media_type, mt::kOciManifest);
}

TEST(Manifest, IndexIsNotAManifestAndBack) {
  EXPECT_EQ(format_error_of([] { parse_manifest(samples::kOciIndexWithAttestations, mt::kOciIndex); }),
            "image manifest: media type \"application/vnd.oci.image.index.v1+json\" is not an image manifest");
  EXPECT_EQ(format_error_of([] { parse_index(samples::kOciManifest, mt::kOciManifest); }),
            "image index: media type \"application/vnd.oci.image.manifest.v1+json\" is not an image index");
  // Told by the Content-Type alone: an error page is not parsed as JSON.
  EXPECT_EQ(format_error_of([] { parse_manifest("<html>502 Bad Gateway</html>", "text/html; charset=utf-8"); }),
            "image manifest: media type \"text/html\" is not an image manifest");
  // Told by the document when the Content-Type says nothing.
  EXPECT_EQ(format_error_of([] { parse_index(samples::kOciManifest, "application/json"); }),
            "image index: media type \"application/vnd.oci.image.manifest.v1+json\" is not an image index");
}

TEST(Manifest, KindOfTellsIndexFromManifest) {
  EXPECT_EQ(kind_of(mt::kOciIndex, "not even json"), ManifestKind::Index);
  EXPECT_EQ(kind_of(mt::kDockerManifestList, ""), ManifestKind::Index);
  EXPECT_EQ(kind_of(mt::kOciManifest, ""), ManifestKind::Manifest);
  EXPECT_EQ(kind_of("application/vnd.docker.distribution.manifest.v2+json; charset=utf-8", ""), ManifestKind::Manifest);
  EXPECT_EQ(kind_of("application/json", samples::kNestedIndex), ManifestKind::Index);
  EXPECT_EQ(kind_of("", samples::kDockerManifest), ManifestKind::Manifest);
  std::string untyped_index = R"({"schemaVersion":2,"manifests":[]})";
  EXPECT_EQ(kind_of("text/plain", untyped_index), ManifestKind::Index);
  std::string untyped_manifest = R"({"schemaVersion":2,"config":{},"layers":[]})";
  EXPECT_EQ(kind_of("application/octet-stream", untyped_manifest), ManifestKind::Manifest);
}

TEST(Manifest, KindOfRefusesWhatIsNeither) {
  EXPECT_NE(format_error_of([] {
              kind_of("application/vnd.docker.distribution.manifest.v1+prettyjws", "{}");
            }).find("Docker schema 1 manifests are not supported"),
            std::string::npos);
  EXPECT_NE(
      format_error_of([] { kind_of("application/json", R"({"schemaVersion":1,"fsLayers":[]})"); }).find("schema 1"),
      std::string::npos);
  EXPECT_EQ(format_error_of([] { kind_of("text/html", "<html>"); }),
            "unsupported manifest media type \"text/html\" (expected an image index or manifest)");
  EXPECT_EQ(format_error_of([] { kind_of("application/json", R"({"hello":"world"})"); }),
            "document is neither an image index nor an image manifest");
  EXPECT_EQ(format_error_of([] { kind_of("application/json", "[1,2]"); }), "manifest is not a JSON object");
  EXPECT_NE(format_error_of([] { kind_of("application/json", "{\"schemaVersion\": 2,"); }).find("not valid JSON"),
            std::string::npos);
}

TEST(Manifest, UnknownIndexEntriesAreKeptOrDroppedButNeverAnError) {
  std::string doc = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
    {"mediaType":"application/vnd.example.sbom+json","digest":"sha256:922badbaf192e1a4a5af64df422de6d73e96e70d0ab52245bd3d692bcea9cfad","size":10},
    {"mediaType":"application/vnd.example.future","digest":"blake9:zzz","size":-1},
    {"mediaType":42},
    {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:77cd300ffdf16f18318d6059f680f509a8b4572bfd4bfff182497390575a108e","size":7,"platform":{"os":"linux","architecture":"amd64"}}]})";
  Index index = parse_index(doc, mt::kOciIndex);
  ASSERT_EQ(index.manifests.size(), 2u);
  EXPECT_EQ(index.manifests[0].media_type, "application/vnd.example.sbom+json");
  EXPECT_EQ(index.manifests[1].media_type, mt::kOciManifest);
}

// The upstream SIF test input: an index whose digests are too short to be sha256.
TEST(Manifest, FixtureIndexWithShortDigestsIsRefusedNamingTheField) {
  std::string bytes = test::read_file(test::sif_fixture("input/index.json"));
  EXPECT_EQ(format_error_of([&] { parse_index(bytes, mt::kOciIndex); }),
            "image index: manifests[0].digest: invalid digest \"sha256:abcdef1234567890\": sha256 needs 64 "
            "lower-case hex digits");
  EXPECT_EQ(kind_of("application/json", bytes), ManifestKind::Index);
}

struct Broken {
  std::string name;
  std::string document;
  std::string content_type;
  std::string expected;  // the start of the message
};
void PrintTo(const Broken& b, std::ostream* os) { *os << b.name; }

std::string oci_manifest_with(const std::string& from, const std::string& to) {
  return replace(std::string(samples::kOciManifest), from, to);
}

std::vector<Broken> broken_manifests() {
  const std::string m(samples::kOciManifest);
  return {
      {"empty", "", std::string(mt::kOciManifest), "image manifest: the document is empty"},
      {"truncated", m.substr(0, m.size() / 2), std::string(mt::kOciManifest), "image manifest: not valid JSON: "},
      {"trailing-garbage", m + "}", std::string(mt::kOciManifest), "image manifest: not valid JSON: "},
      {"array", "[]", std::string(mt::kOciManifest), "image manifest: not a JSON object"},
      {"schema-1", oci_manifest_with("\"schemaVersion\": 2", "\"schemaVersion\": 1"), std::string(mt::kOciManifest),
       "image manifest: Docker schema 1 manifests are not supported"},
      {"schema-3", oci_manifest_with("\"schemaVersion\": 2", "\"schemaVersion\": 3"), std::string(mt::kOciManifest),
       "image manifest: schemaVersion: is 3, capsa reads version 2"},
      {"schema-string", oci_manifest_with("\"schemaVersion\": 2", "\"schemaVersion\": \"2\""),
       std::string(mt::kOciManifest), "image manifest: schemaVersion: must be an integer"},
      {"no-schema", oci_manifest_with("\"schemaVersion\": 2,", ""), std::string(mt::kOciManifest),
       "image manifest: schemaVersion: missing"},
      {"no-config", R"({"schemaVersion":2,"layers":[]})", std::string(mt::kOciManifest),
       "image manifest: config: missing"},
      {"no-layers", oci_manifest_with("\"layers\"", "\"layer\""), std::string(mt::kOciManifest),
       "image manifest: layers: missing"},
      {"layers-object",
       R"({"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:15bb04d9cb3817ba57f751dc189c10dbd906b0587dcb4f252c95df1c4ba8c036","size":1},"layers":{}})",
       std::string(mt::kOciManifest), "image manifest: layers: must be an array"},
      {"negative-size", oci_manifest_with("\"size\": 4067", "\"size\": -4067"), std::string(mt::kOciManifest),
       "image manifest: layers[1].size: must be a non-negative integer"},
      {"fractional-size", oci_manifest_with("\"size\": 4067", "\"size\": 40.5"), std::string(mt::kOciManifest),
       "image manifest: layers[1].size: must be an integer"},
      {"huge-size", oci_manifest_with("\"size\": 4067", "\"size\": 18446744073709551615"),
       std::string(mt::kOciManifest), "image manifest: layers[1].size: is too large"},
      {"size-missing", oci_manifest_with("\"size\": 1470", "\"length\": 1470"), std::string(mt::kOciManifest),
       "image manifest: config.size: missing"},
      {"digest-short",
       oci_manifest_with("sha256:6bdb18f83935f1d97220ee8035e6ccd7e764c32102587be4488f940f943ebda6", "sha256:6bdb18f8"),
       std::string(mt::kOciManifest),
       "image manifest: layers[1].digest: invalid digest \"sha256:6bdb18f8\": sha256 needs 64 lower-case hex digits"},
      {"digest-upper-case",
       oci_manifest_with("sha256:6bdb18f83935f1d97220ee8035e6ccd7e764c32102587be4488f940f943ebda6",
                         "sha256:6BDB18F83935F1D97220EE8035E6CCD7E764C32102587BE4488F940F943EBDA6"),
       std::string(mt::kOciManifest),
       "image manifest: layers[1].digest: invalid digest "
       "\"sha256:6BDB18F83935F1D97220EE8035E6CCD7E764C32102587BE4488F940F943EBDA6\": sha256 needs 64 lower-case hex "
       "digits"},
      {"digest-algorithm",
       oci_manifest_with("sha256:6bdb18f83935f1d97220ee8035e6ccd7e764c32102587be4488f940f943ebda6", "md5:0123abcd"),
       std::string(mt::kOciManifest),
       "image manifest: layers[1].digest: invalid digest \"md5:0123abcd\": unsupported algorithm \"md5\" (capsa "
       "accepts sha256 and sha512)"},
      {"digest-number",
       oci_manifest_with("\"sha256:6bdb18f83935f1d97220ee8035e6ccd7e764c32102587be4488f940f943ebda6\"", "42"),
       std::string(mt::kOciManifest), "image manifest: layers[1].digest: must be a string"},
      {"unknown-layer-type",
       oci_manifest_with("application/vnd.oci.image.layer.v1.tar+zstd", "application/vnd.example.layer.v1.squashfs"),
       std::string(mt::kOciManifest),
       "image manifest: layers[1].mediaType: unsupported layer media type "
       "\"application/vnd.example.layer.v1.squashfs\""},
      {"helm-chart",
       oci_manifest_with("application/vnd.oci.image.config.v1+json", "application/vnd.cncf.helm.config.v1+json"),
       std::string(mt::kOciManifest),
       "image manifest: config.mediaType: \"application/vnd.cncf.helm.config.v1+json\" is not a container image "
       "config (an OCI artifact rather than an image?)"},
      {"annotation-not-string", oci_manifest_with("\"empty.tar\"", "true"), std::string(mt::kOciManifest),
       "image manifest: layers[2].annotations: must be an object of strings"},
      {"control-characters-escaped",
       oci_manifest_with("application/vnd.oci.image.layer.v1.tar+zstd", "evil\\n\\u001b[31mred"),
       std::string(mt::kOciManifest),
       "image manifest: layers[1].mediaType: unsupported layer media type \"evil\\n\\x1b[31mred\""},
  };
}

class BrokenManifest : public testing::TestWithParam<Broken> {};

TEST_P(BrokenManifest, IsRefusedWithAOneLineMessageNamingTheProblem) {
  const Broken& b = GetParam();
  std::string message = format_error_of([&] { parse_manifest(b.document, b.content_type); });
  EXPECT_EQ(message.substr(0, b.expected.size()), b.expected);
}

std::string case_name(const testing::TestParamInfo<Broken>& param) {
  std::string name = param.param.name;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(All, BrokenManifest, testing::ValuesIn(broken_manifests()), case_name);

TEST(Manifest, BrokenIndexesNameTheEntry) {
  std::string missing_platform_os = replace(std::string(samples::kDockerManifestList), R"("os": "linux",
            "variant": "v7")",
                                            R"("variant": "v7")");
  EXPECT_EQ(format_error_of([&] { parse_index(missing_platform_os, mt::kDockerManifestList); }),
            "image index: manifests[1].platform.os: missing");
  EXPECT_EQ(format_error_of([] { parse_index(R"({"schemaVersion":2})", mt::kOciIndex); }),
            "image index: manifests: missing");
  EXPECT_EQ(format_error_of([] { parse_index(R"({"schemaVersion":2,"manifests":[7]})", mt::kOciIndex); }),
            "image index: manifests[0]: must be an object");
}

TEST(Manifest, HostileShapesAreRefusedNotFollowed) {
  std::string deep(100000, '[');
  EXPECT_NE(format_error_of([&] { parse_manifest(deep, mt::kOciManifest); }).find("nested deeper than 64 levels"),
            std::string::npos);
  std::string huge = std::string(samples::kOciManifest) + std::string(kMaxManifestBytes, ' ');
  EXPECT_NE(format_error_of([&] { parse_manifest(huge, mt::kOciManifest); }).find("larger than the 4194304 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace capsa::oci
