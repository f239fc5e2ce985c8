// The oras:// manifest, byte for byte as Apptainer's push writes it (the example in
// internal/pkg/client/oras/image.go), and the checks a pull makes of one.
#include <gtest/gtest.h>

#include "oci/sif_artifact.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

const SifLayer kUbuntu{"sha256:13e1552aaf6aa3916353730be52e06ec214ae8f8a89062cec1f33990b553a6c9", 29814784,
                       "ubuntu_latest.sif"};

TEST(SifArtifact, ManifestIsApptainersByteForByte) {
  EXPECT_EQ(sif_manifest(kUbuntu, {{"org.opencontainers.image.created", "2023-12-19T16:02:14Z"}}),
            R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
            R"("config":{"mediaType":"application/vnd.sylabs.sif.config.v1+json","size":2,)"
            R"("digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","data":"e30="},)"
            R"("layers":[{"mediaType":"application/vnd.sylabs.sif.layer.v1.sif","size":29814784,)"
            R"("digest":"sha256:13e1552aaf6aa3916353730be52e06ec214ae8f8a89062cec1f33990b553a6c9",)"
            R"("annotations":{"org.opencontainers.image.title":"ubuntu_latest.sif"}}],)"
            R"("annotations":{"org.opencontainers.image.created":"2023-12-19T16:02:14Z"}})");
}

TEST(SifArtifact, NoAnnotationsMeansNoMapAndStringsAreEscapedAsGoDoes) {
  SifLayer odd = kUbuntu;
  odd.title = "a<b>&c\xe2\x80\xa8.sif";
  const std::string manifest = sif_manifest(odd, {});
  EXPECT_EQ(manifest.find("\"annotations\":{\"org.opencontainers.image.title\""), manifest.rfind("\"annotations\""))
      << "only the layer has annotations: " << manifest;
  EXPECT_NE(manifest.find(R"("a\u003cb\u003e\u0026c\u2028.sif")"), std::string::npos) << manifest;
  EXPECT_EQ(parse_sif_manifest(manifest, "oras://x").title, odd.title);
}

TEST(SifArtifact, ParseTakesTheOneSifLayer) {
  const SifLayer layer = parse_sif_manifest(sif_manifest(kUbuntu, {}), "oras://x");
  EXPECT_EQ(layer.digest, kUbuntu.digest);
  EXPECT_EQ(layer.size, kUbuntu.size);
  EXPECT_EQ(layer.title, kUbuntu.title);
  // Singularity's prototype media type (typo included) is still accepted, as by Apptainer.
  std::string prototype = sif_manifest(kUbuntu, {});
  prototype.replace(prototype.find("application/vnd.sylabs.sif.layer.v1.sif"), 39,
                    "appliciation/vnd.sylabs.sif.layer.tar");
  EXPECT_EQ(parse_sif_manifest(prototype, "oras://x").digest, kUbuntu.digest);
}

TEST(SifArtifact, ParseRefusesWhatIsNotOneSifLayer) {
  const std::string tar =
      R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip",)"
      R"("size":1,"digest":"sha256:13e1552aaf6aa3916353730be52e06ec214ae8f8a89062cec1f33990b553a6c9"}]})";
  try {
    parse_sif_manifest(tar, "oras://reg/img:1");
    FAIL() << "accepted a tar layer";
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(),
                 "oras://reg/img:1: invalid layer media type 'application/vnd.oci.image.layer.v1.tar+gzip' (an "
                 "oras:// image has one application/vnd.sylabs.sif.layer.v1.sif layer; is it a docker:// image?)");
  }
  const std::string two = R"({"schemaVersion":2,"layers":[{},{}]})";
  EXPECT_THROW(
      {
        try {
          parse_sif_manifest(two, "oras://reg/img:1");
        } catch (const FormatError& e) {
          EXPECT_NE(std::string(e.what()).find("should have a single layer, found 2"), std::string::npos) << e.what();
          throw;
        }
      },
      FormatError);
  EXPECT_THROW(parse_sif_manifest("[]", "oras://x"), FormatError);
  EXPECT_THROW(
      parse_sif_manifest(R"({"layers":[{"mediaType":"application/vnd.sylabs.sif.layer.v1.sif"}]})", "oras://x"),
      FormatError);
}

}  // namespace
}  // namespace capsa::oci
