// Documents made by the tools that make real images: umoci writes an OCI layout, skopeo
// converts it to Docker schema 2 and to zstd layers. capsa must read what they wrote,
// and the digests they recorded must verify.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "oci/image_config.hpp"
#include "oci/manifest.hpp"
#include "oci/media_types.hpp"
#include "oci/select.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::oci {
namespace {

using test::TempDir;

void run(const std::vector<std::string>& argv) {
  auto result = test::run_process(argv);
  ASSERT_EQ(result.exit_code, 0) << argv[0] << " " << argv[1] << ": " << result.err;
}

// An arm64 image with one layer and every run-time config field umoci can set.
class RealDocuments : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"umoci", "skopeo"})
      ASSERT_TRUE(test::have_program(tool)) << tool << " is missing: run scripts/install-deps.sh";
    layout_ = dir_ / "layout";
    const std::string image = layout_ + ":latest";
    run({"umoci", "init", "--layout", layout_});
    run({"umoci", "new", "--image", image});
    run({"umoci",
         "config",
         "--image",
         image,
         "--config.env",
         "FOO=bar",
         "--config.entrypoint",
         "/entry",
         "--config.cmd",
         "/bin/sh",
         "--config.cmd",
         "-c",
         "--config.workingdir",
         "/work",
         "--config.label",
         "org.example=yes",
         "--config.volume",
         "/data",
         "--architecture",
         "arm64",
         "--os",
         "linux"});
    run({"umoci", "insert", "--image", image, dir_.write("hello.txt", "hello\n"), "/hello.txt"});
  }

  // The blob of an OCI layout, checked against its descriptor.
  std::string layout_blob(const Descriptor& d) const {
    std::string bytes = test::read_file(layout_ + "/blobs/" + d.digest.algorithm() + "/" + d.digest.hex());
    verify_content(d, bytes);
    return bytes;
  }

  TempDir dir_;
  std::string layout_;
};

TEST_F(RealDocuments, UmociOciLayoutReadsFromIndexToConfig) {
  std::string index_bytes = test::read_file(layout_ + "/index.json");
  ASSERT_EQ(kind_of("application/json", index_bytes), ManifestKind::Index);
  Index index = parse_index(index_bytes, media_type::kOciIndex);
  // A layout's index names no platform: the entry is the fallback for any request.
  Descriptor chosen = select_manifest(index, parse_platform("linux/arm64"), "oci:layout");
  Manifest manifest = parse_manifest(layout_blob(chosen), chosen.media_type);
  EXPECT_EQ(manifest.media_type, media_type::kOciManifest);
  ASSERT_EQ(manifest.layers.size(), 1u);
  EXPECT_EQ(layer_compression(manifest.layers[0].media_type), Compression::Gzip);
  layout_blob(manifest.layers[0]);

  ImageConfig config = parse_image_config(layout_blob(manifest.config));
  check_layers_match(manifest, config);
  EXPECT_EQ(config.platform().to_string(), "linux/arm64");
  EXPECT_EQ(platform_mismatch_warning(config, parse_platform("linux/arm64/v8")), std::nullopt);
  EXPECT_TRUE(platform_mismatch_warning(config, parse_platform("linux/amd64")).has_value());
  EXPECT_EQ(config.env.back(), "FOO=bar");
  EXPECT_EQ(config.entrypoint, std::vector<std::string>{"/entry"});
  EXPECT_EQ(config.cmd, (std::vector<std::string>{"/bin/sh", "-c"}));
  EXPECT_EQ(config.working_dir, "/work");
  EXPECT_EQ(config.labels.at("org.example"), "yes");
  EXPECT_EQ(config.volumes, std::vector<std::string>{"/data"});
  EXPECT_EQ(config.config.at("WorkingDir"), "/work");
}

TEST_F(RealDocuments, SkopeoDockerSchema2ConversionReads) {
  const std::string out = dir_ / "docker";
  run({"skopeo", "--insecure-policy", "copy", "-q", "--format", "v2s2", "oci:" + layout_ + ":latest", "dir:" + out});
  std::string bytes = test::read_file(out + "/manifest.json");
  ASSERT_EQ(kind_of("", bytes), ManifestKind::Manifest);
  Manifest manifest = parse_manifest(bytes, media_type::kDockerManifest);
  EXPECT_EQ(manifest.config.media_type, media_type::kDockerConfig);
  ASSERT_EQ(manifest.layers.size(), 1u);
  EXPECT_EQ(manifest.layers[0].media_type, media_type::kDockerLayerGzip);
  // skopeo's dir: transport names each blob by its hex digest.
  std::string config_bytes = test::read_file(out + "/" + manifest.config.digest.hex());
  verify_content(manifest.config, config_bytes);
  ImageConfig config = parse_image_config(config_bytes);
  check_layers_match(manifest, config);
  EXPECT_EQ(config.cmd, (std::vector<std::string>{"/bin/sh", "-c"}));
  verify_content(manifest.layers[0], test::read_file(out + "/" + manifest.layers[0].digest.hex()));
}

TEST_F(RealDocuments, SkopeoZstdLayersRead) {
  const std::string out = dir_ / "zstd";
  run({"skopeo", "--insecure-policy", "copy", "-q", "--dest-compress-format", "zstd", "oci:" + layout_ + ":latest",
       "oci:" + out + ":latest"});
  Index index = parse_index(test::read_file(out + "/index.json"), "");
  const Descriptor& entry = index.manifests.at(0);
  std::string bytes = test::read_file(out + "/blobs/sha256/" + entry.digest.hex());
  verify_content(entry, bytes);
  Manifest manifest = parse_manifest(bytes, entry.media_type);
  ASSERT_EQ(manifest.layers.size(), 1u);
  EXPECT_EQ(layer_compression(manifest.layers[0].media_type), Compression::Zstd);
}

}  // namespace
}  // namespace capsa::oci
