// Which media types capsa accepts where (§B3, §B7 of the protocol notes).
#include "oci/media_types.hpp"

#include <gtest/gtest.h>

namespace capsa::oci {
namespace {

TEST(MediaTypes, EveryLayerTypeOfTheSpecsHasItsCompression) {
  const std::pair<const char*, Compression> layers[] = {
      {"application/vnd.oci.image.layer.v1.tar", Compression::None},
      {"application/vnd.oci.image.layer.v1.tar+gzip", Compression::Gzip},
      {"application/vnd.oci.image.layer.v1.tar+zstd", Compression::Zstd},
      {"application/vnd.oci.image.layer.nondistributable.v1.tar", Compression::None},
      {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", Compression::Gzip},
      {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", Compression::Zstd},
      {"application/vnd.docker.image.rootfs.diff.tar.gzip", Compression::Gzip},
      {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", Compression::Gzip},
  };
  for (const auto& [type, compression] : layers) EXPECT_EQ(layer_compression(type), compression) << type;
  for (const char* other : {"application/vnd.oci.image.config.v1+json", "application/vnd.in-toto+json",
                            "application/vnd.oci.empty.v1+json", "application/vnd.oci.image.layer.v1.tar+bzip2", ""})
    EXPECT_EQ(layer_compression(other), std::nullopt) << other;
}

TEST(MediaTypes, ManifestIndexAndConfigTypes) {
  EXPECT_TRUE(is_index_type("application/vnd.oci.image.index.v1+json"));
  EXPECT_TRUE(is_index_type("application/vnd.docker.distribution.manifest.list.v2+json"));
  EXPECT_TRUE(is_manifest_type("application/vnd.oci.image.manifest.v1+json"));
  EXPECT_TRUE(is_manifest_type("application/vnd.docker.distribution.manifest.v2+json"));
  EXPECT_FALSE(is_manifest_type("application/vnd.docker.distribution.manifest.v1+prettyjws"));
  EXPECT_TRUE(is_schema1_type("application/vnd.docker.distribution.manifest.v1+prettyjws"));
  EXPECT_TRUE(is_config_type("application/vnd.oci.image.config.v1+json"));
  EXPECT_TRUE(is_config_type("application/vnd.docker.container.image.v1+json"));
  EXPECT_FALSE(is_config_type("application/vnd.oci.empty.v1+json"));
}

TEST(MediaTypes, AcceptHeaderNamesTheFourModernTypes) {
  for (auto type :
       {media_type::kOciIndex, media_type::kDockerManifestList, media_type::kOciManifest, media_type::kDockerManifest})
    EXPECT_NE(kManifestAccept.find(type), std::string_view::npos) << type;
  EXPECT_EQ(kManifestAccept.find("v1+prettyjws"), std::string_view::npos);
}

TEST(MediaTypes, ContentTypeEssence) {
  EXPECT_EQ(essence_of("application/vnd.oci.image.index.v1+json"), "application/vnd.oci.image.index.v1+json");
  EXPECT_EQ(essence_of(" Application/JSON ; charset=utf-8"), "application/json");
  EXPECT_EQ(essence_of(""), "");
}

}  // namespace
}  // namespace capsa::oci
