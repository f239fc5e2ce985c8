// Choosing the image for a platform from an index: what a user on each kind of machine
// gets from the multi-platform images registries serve.
#include "oci/select.hpp"

#include <gtest/gtest.h>

#include "oci/manifest.hpp"
#include "oci/media_types.hpp"
#include "sample_documents.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

namespace mt = media_type;

Index docker_list() { return parse_index(samples::kDockerManifestList, mt::kDockerManifestList); }
Index buildkit_index() { return parse_index(samples::kOciIndexWithAttestations, mt::kOciIndex); }

// The chosen entry, shown as its platform, or the error message.
std::string choose(const Index& index, std::string_view platform) {
  try {
    Descriptor d = select_manifest(index, parse_platform(platform), "docker://x/y:z");
    return d.platform ? d.platform->to_string() : "(no platform) " + d.digest.to_string();
  } catch (const FormatError& e) {
    return e.what();
  }
}

Index index_of(const std::string& entries) {
  return parse_index(
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[)" + entries + "]}",
      mt::kOciIndex);
}

std::string entry(const std::string& platform_json, char digit) {
  return R"({"mediaType":"application/vnd.oci.image.manifest.v1+json","size":1,"digest":"sha256:)" +
         std::string(64, digit) + "\"" + (platform_json.empty() ? "" : ",\"platform\":" + platform_json) + "}";
}

TEST(Select, EachMachineGetsItsOwnImageFromADockerManifestList) {
  Index index = docker_list();
  EXPECT_EQ(choose(index, "linux/amd64"), "linux/amd64");
  EXPECT_EQ(choose(index, "linux/arm64"), "linux/arm64/v8");  // missing variant means v8
  EXPECT_EQ(choose(index, "linux/arm64/v8"), "linux/arm64/v8");
  EXPECT_EQ(choose(index, "linux/aarch64"), "linux/arm64/v8");
  EXPECT_EQ(choose(index, "linux/arm/v7"), "linux/arm/v7");
  EXPECT_EQ(choose(index, "linux/armhf"), "linux/arm/v7");
  EXPECT_EQ(choose(index, "linux/ppc64le"), "linux/ppc64le");
  EXPECT_EQ(choose(index, "linux/s390x"), "linux/s390x");
}

TEST(Select, NoMatchListsWhatTheIndexOffers) {
  EXPECT_EQ(choose(docker_list(), "linux/riscv64"),
            "no image for linux/riscv64 in docker://x/y:z; available: linux/amd64, linux/arm/v7, linux/arm64/v8, "
            "linux/ppc64le, linux/s390x");
  // arm v6 cannot run a v7 image; a v8 CPU runs v7.
  EXPECT_NE(choose(docker_list(), "linux/arm/v6").find("no image for linux/arm/v6"), std::string::npos);
  EXPECT_EQ(choose(docker_list(), "linux/arm/v8"), "linux/arm/v7");
}

TEST(Select, AttestationsAreNeverChosenNorOffered) {
  Index index = buildkit_index();
  Descriptor amd64 = select_manifest(index, parse_platform("linux/amd64"), "img");
  EXPECT_EQ(amd64.digest.to_string(), "sha256:77cd300ffdf16f18318d6059f680f509a8b4572bfd4bfff182497390575a108e");
  EXPECT_EQ(choose(index, "linux/arm64/v8"), "linux/arm64");
  EXPECT_EQ(choose(index, "linux/ppc64le"),
            "no image for linux/ppc64le in docker://x/y:z; available: linux/amd64, linux/arm64");
  EXPECT_TRUE(is_attestation(index.manifests[2]));
  EXPECT_FALSE(is_attestation(index.manifests[0]));
}

TEST(Select, AnIndexOfOnlyAttestationsHasNothingToOffer) {
  Index index = buildkit_index();
  index.manifests.erase(index.manifests.begin(), index.manifests.begin() + 2);
  EXPECT_EQ(choose(index, "linux/amd64"), "no image for linux/amd64 in docker://x/y:z; available: none");
}

TEST(Select, FirstMatchWins) {
  Index index = index_of(entry(R"({"os":"linux","architecture":"amd64"})", '1') + "," +
                         entry(R"({"os":"linux","architecture":"amd64"})", '2'));
  EXPECT_EQ(select_manifest(index, parse_platform("linux/amd64"), "img").digest.hex(), std::string(64, '1'));
}

TEST(Select, ExactVariantBeatsAnEarlierCompatibleOne) {
  Index index = index_of(entry(R"({"os":"linux","architecture":"amd64"})", '1') + "," +
                         entry(R"({"os":"linux","architecture":"amd64","variant":"v2"})", '2') + "," +
                         entry(R"({"os":"linux","architecture":"amd64","variant":"v3"})", '3'));
  EXPECT_EQ(select_manifest(index, parse_platform("linux/amd64/v3"), "img").digest.hex(), std::string(64, '3'));
  EXPECT_EQ(select_manifest(index, parse_platform("linux/amd64/v2"), "img").digest.hex(), std::string(64, '2'));
  EXPECT_EQ(select_manifest(index, parse_platform("linux/amd64"), "img").digest.hex(), std::string(64, '1'));
  // v4 host, no v4 image: the highest level below it.
  EXPECT_EQ(select_manifest(index, parse_platform("linux/amd64/v4"), "img").digest.hex(), std::string(64, '3'));
}

TEST(Select, AHigherFeatureLevelIsNotChosenForALowerHost) {
  Index index = index_of(entry(R"({"os":"linux","architecture":"amd64","variant":"v3"})", '3'));
  EXPECT_EQ(choose(index, "linux/amd64"), "no image for linux/amd64 in docker://x/y:z; available: linux/amd64/v3");
}

TEST(Select, UnknownMediaTypesAreSkipped) {
  Index index = index_of(R"({"mediaType":"application/vnd.example.wasm","size":1,"digest":"sha256:)" +
                         std::string(64, '9') + R"(","platform":{"os":"linux","architecture":"amd64"}},)" +
                         entry(R"({"os":"linux","architecture":"amd64"})", '1'));
  EXPECT_EQ(select_manifest(index, parse_platform("linux/amd64"), "img").digest.hex(), std::string(64, '1'));
}

TEST(Select, NestedIndexIsReturnedForTheCallerToFetch) {
  Index outer = parse_index(samples::kNestedIndex, mt::kOciIndex);
  Descriptor inner = select_manifest(outer, parse_platform("linux/amd64"), "img");
  EXPECT_EQ(inner.media_type, mt::kOciIndex);
  EXPECT_EQ(inner.digest.to_string(), "sha256:ec229d91bf37c07f85fe126c65ca223eedfa090e2d7509579231bce9bab18ee7");
}

TEST(Select, EntriesWithoutPlatformAreTheFallback) {
  Index index = index_of(entry("", '1') + "," + entry(R"({"os":"linux","architecture":"arm64"})", '2'));
  EXPECT_EQ(select_manifest(index, parse_platform("linux/arm64"), "img").digest.hex(), std::string(64, '2'));
  EXPECT_EQ(select_manifest(index, parse_platform("linux/amd64"), "img").digest.hex(), std::string(64, '1'));
}

TEST(Select, HostileImageNameAndPlatformsStayOnOneLine) {
  Index index = index_of(entry(R"({"os":"linux\nEVIL","architecture":"amd64"})", '1'));
  try {
    select_manifest(index, parse_platform("linux/amd64"), "docker://x\n/y");
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "no image for linux/amd64 in docker://x\\n/y; available: linux\\nEVIL/amd64");
  }
}

}  // namespace
}  // namespace capsa::oci
