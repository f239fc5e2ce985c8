// Image configs as Docker and OCI tools write them, and what capsa keeps from them.
#include "oci/image_config.hpp"

#include <gtest/gtest.h>

#include "oci/media_types.hpp"
#include "sample_documents.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

std::string error_of(std::string_view bytes) {
  try {
    parse_image_config(bytes);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(accepted)";
}

// The upstream SIF test input: the config of docker.io busybox as an OCI config.
TEST(ImageConfig, FixtureBusyboxConfig) {
  ImageConfig c = parse_image_config(test::read_file(test::sif_fixture("input/oci-config.json")));
  EXPECT_EQ(c.platform().to_string(), "linux/amd64");
  EXPECT_EQ(c.created, "2023-03-29T18:19:24.45578926Z");
  EXPECT_EQ(c.env, std::vector<std::string>{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"});
  EXPECT_EQ(c.cmd, std::vector<std::string>{"/bin/sh"});
  EXPECT_FALSE(c.entrypoint.has_value());
  EXPECT_EQ(c.rootfs_type, "layers");
  ASSERT_EQ(c.diff_ids.size(), 1u);
  EXPECT_EQ(c.diff_ids[0].hex(), "f1417ff83b319fbdae6dd9cd6d8c9c88002dcd75ecf6ec201c8c6894681cf2b5");
  ASSERT_EQ(c.history.size(), 2u);
  EXPECT_FALSE(c.history[0].empty_layer);
  EXPECT_TRUE(c.history[1].empty_layer);
  EXPECT_EQ(c.history[1].created_by, "/bin/sh -c #(nop)  CMD [\"/bin/sh\"]");
  // What Apptainer stores as oci-config.json: the "config" object.
  EXPECT_EQ(c.config.dump(),
            R"({"Cmd":["/bin/sh"],"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]})");
}

TEST(ImageConfig, DockerBuildConfigWithNullsAndEveryRunField) {
  ImageConfig c = parse_image_config(samples::kDockerConfig);
  EXPECT_EQ(c.platform().to_string(), "linux/arm64/v8");
  EXPECT_EQ(c.author, "Jupyter Project");
  EXPECT_EQ(c.env.size(), 3u);
  EXPECT_EQ(c.entrypoint, (std::vector<std::string>{"tini", "-g", "--"}));
  EXPECT_EQ(c.cmd, std::vector<std::string>{"start-notebook.py"});
  EXPECT_EQ(c.working_dir, "/home/jovyan");
  EXPECT_EQ(c.user, "1000:1000");
  EXPECT_EQ(c.labels.at("maintainer"), "Jupyter Project <jupyter@googlegroups.com>");
  EXPECT_EQ(c.volumes, (std::vector<std::string>{"/data", "/home/jovyan/work"}));
  EXPECT_EQ(c.stop_signal, "SIGTERM");
  EXPECT_EQ(c.diff_ids.size(), 2u);
  EXPECT_EQ(c.history[2].comment, "buildkit.dockerfile.v0");
  EXPECT_TRUE(c.config.contains("OnBuild"));  // kept as received, nulls included
  EXPECT_TRUE(c.config.contains("ExposedPorts"));
}

TEST(ImageConfig, NullAndAbsentRunFieldsAreUnset) {
  ImageConfig c = parse_image_config(
      R"({"architecture":"amd64","os":"linux","config":{"Env":null,"Cmd":null,"Entrypoint":null,"Labels":null,"Volumes":null},"rootfs":{"type":"layers","diff_ids":[]}})");
  EXPECT_TRUE(c.env.empty());
  EXPECT_FALSE(c.cmd.has_value());
  EXPECT_FALSE(c.entrypoint.has_value());
  EXPECT_TRUE(c.labels.empty());
  ImageConfig bare = parse_image_config(R"({"rootfs":{"type":"layers","diff_ids":[]}})");
  EXPECT_TRUE(bare.config.is_object());
  EXPECT_TRUE(bare.config.empty());
  // Empty Entrypoint (ENTRYPOINT []) is set, and empty: it resets the base image's.
  ImageConfig reset = parse_image_config(R"({"config":{"Entrypoint":[]},"rootfs":{"type":"layers","diff_ids":[]}})");
  ASSERT_TRUE(reset.entrypoint.has_value());
  EXPECT_TRUE(reset.entrypoint->empty());
}

TEST(ImageConfig, MalformedConfigsNameTheField) {
  const std::string rootfs = R"("rootfs":{"type":"layers","diff_ids":[]})";
  EXPECT_EQ(error_of("{"),
            "image config: not valid JSON: parse error at line 1, column 2: syntax error while parsing "
            "object key - unexpected end of input; expected string literal");
  EXPECT_EQ(error_of("{}"), "image config: rootfs: missing");
  EXPECT_EQ(error_of(R"({"rootfs":{"type":"layers"}})"), "image config: rootfs.diff_ids: missing");
  EXPECT_EQ(error_of(R"({"rootfs":{"type":"squashfs","diff_ids":[]}})"),
            "image config: rootfs.type: is \"squashfs\", the image spec requires \"layers\"");
  EXPECT_EQ(error_of(R"({"rootfs":{"type":"layers","diff_ids":["sha256:1234"]}})"),
            "image config: rootfs.diff_ids[0]: invalid digest \"sha256:1234\": sha256 needs 64 lower-case hex digits");
  EXPECT_EQ(error_of(R"({"config":{"Env":"PATH=/bin"},)" + rootfs + "}"),
            "image config: config.Env: must be an array of strings");
  EXPECT_EQ(error_of(R"({"config":{"Cmd":["sh",1]},)" + rootfs + "}"),
            "image config: config.Cmd: must be an array of strings");
  EXPECT_EQ(error_of(R"({"config":{"Labels":{"a":1}},)" + rootfs + "}"),
            "image config: config.Labels: must be an object of strings");
  EXPECT_EQ(error_of(R"({"config":{"Volumes":["/data"]},)" + rootfs + "}"),
            "image config: config.Volumes: must be an object");
  EXPECT_EQ(error_of(R"({"config":[],)" + rootfs + "}"), "image config: config: must be an object");
  EXPECT_EQ(error_of(R"({"architecture":64,)" + rootfs + "}"), "image config: architecture: must be a string");
  EXPECT_EQ(error_of(R"({"history":[{"empty_layer":"yes"}],)" + rootfs + "}"),
            "image config: history[0].empty_layer: must be true or false");
}

TEST(ImageConfig, DiffIdsMustMatchTheManifestLayers) {
  Manifest m = parse_manifest(samples::kDockerManifest, media_type::kDockerManifest);  // 2 layers
  EXPECT_NO_THROW(check_layers_match(m, parse_image_config(samples::kDockerConfig)));
  ImageConfig one = parse_image_config(test::read_file(test::sif_fixture("input/oci-config.json")));
  try {
    check_layers_match(m, one);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_STREQ(e.what(), "image config lists 1 layer diff_ids but the manifest has 2 layers");
  }
}

TEST(ImageConfig, PlatformMismatchIsAWarningNotAnError) {
  ImageConfig arm = parse_image_config(samples::kDockerConfig);
  EXPECT_EQ(platform_mismatch_warning(arm, parse_platform("linux/arm64")), std::nullopt);
  EXPECT_EQ(platform_mismatch_warning(arm, parse_platform("linux/amd64")),
            "the image is built for linux/arm64/v8, not linux/amd64; it may not run on this host");
  ImageConfig bare = parse_image_config(R"({"rootfs":{"type":"layers","diff_ids":[]}})");
  EXPECT_EQ(platform_mismatch_warning(bare, parse_platform("linux/amd64")),
            "the image does not declare its platform; it may not run on linux/amd64");
}

}  // namespace
}  // namespace capsa::oci
