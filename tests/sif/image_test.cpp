// Reading the upstream-made fixtures: every fact asserted here is documented in
// tests/fixtures/upstream/sif/README.md and was produced by the reference Go implementation.
#include "sif/image.hpp"

#include <gtest/gtest.h>

#include "support/test_env.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::sif {
namespace {

using test::sif_fixture;

TEST(SifImage, ReadsAnEmptyDeterministicImage) {
  Image image = Image::open(sif_fixture("images/empty.sif"));
  const Header& h = image.header();
  EXPECT_EQ(h.launch_script_text(), "");
  EXPECT_EQ(h.version_text(), "01");
  EXPECT_EQ(h.arch_name(), "unknown");
  EXPECT_TRUE(h.uuid_is_nil());
  EXPECT_EQ(h.created_at, kZeroTime);
  EXPECT_EQ(h.descriptors_total, 48);
  EXPECT_EQ(h.descriptors_free, 48);
  EXPECT_EQ(h.descriptors_offset, 4096);
  EXPECT_EQ(h.descriptors_size, 48 * 585);
  EXPECT_EQ(h.data_offset, 32176);
  EXPECT_EQ(h.data_size, 0);
  EXPECT_TRUE(image.objects().empty());
  EXPECT_EQ(image.primary_partition(), nullptr);
}

TEST(SifImage, ReadsIdAndLaunchScript) {
  EXPECT_EQ(Image::open(sif_fixture("images/empty-id.sif")).header().uuid_text(),
            "3fa802cc-358b-45e3-bcc0-69dc7a45f9f8");
  EXPECT_EQ(Image::open(sif_fixture("images/empty-launch-script.sif")).header().launch_script_text(),
            "#!/usr/bin/env run-script\n");
}

TEST(SifImage, ReadsTheRealSingularityPulledImage) {
  Image image = Image::open(sif_fixture("real/busybox_amd64.sif"));
  const Header& h = image.header();
  EXPECT_EQ(h.launch_script_text(), "#!/usr/bin/env run-singularity\n");
  EXPECT_EQ(h.uuid_text(), "4f307b4c-58a8-4753-9c0f-21dceefed4a6");
  EXPECT_EQ(h.arch_name(), "amd64");
  EXPECT_EQ(h.data_offset, 32768);  // the legacy convention
  auto objects = image.objects();
  ASSERT_EQ(objects.size(), 5u);
  EXPECT_EQ(objects[0].data_type, DataType::Deffile);
  EXPECT_EQ(objects[0].name_text(), ".");
  EXPECT_EQ(image.read_object(objects[0]), "BootStrap: docker\nFrom: busybox:1.33.1\n");
  EXPECT_EQ(objects[1].name_text(), "inspect-metadata.json");
  EXPECT_EQ(objects[2].name_text(), "oci-config.json");
  EXPECT_EQ(objects[4].data_type, DataType::Signature);
  EXPECT_EQ(objects[4].group_id(), 0u);
  EXPECT_EQ(objects[4].linked_id(), 1u);
  EXPECT_TRUE(objects[4].linked_to_group());
  EXPECT_EQ(objects[4].signature().hash_type, HashType::Sha256);

  const Descriptor* primary = image.primary_partition();
  ASSERT_NE(primary, nullptr);
  EXPECT_EQ(primary->id, 4u);
  EXPECT_EQ(primary->offset, 45056);
  EXPECT_EQ(primary->size, 745472);
  EXPECT_EQ(primary->partition().fs_type, FsType::Squashfs);
  EXPECT_EQ(primary->partition().arch, "amd64");
  EXPECT_EQ(primary->name_text(), "squashfs-275937245");
}

TEST(SifImage, FindsThePrimaryPartitionByDescriptorNotPosition) {
  // one-group.sif: object 1 is a Raw System partition, object 2 the Squashfs PrimSys one.
  Image image = Image::open(sif_fixture("images/one-group.sif"));
  const Descriptor* primary = image.primary_partition();
  ASSERT_NE(primary, nullptr);
  EXPECT_EQ(primary->id, 2u);
  EXPECT_EQ(primary->offset, 36864);
  EXPECT_EQ(primary->size, 4096);
  EXPECT_EQ(image.read_object(*primary), test::read_file(test::upstream_fixtures() + "/sif/input/root.squashfs"));
  EXPECT_EQ(image.header().arch_name(), "386");
}

TEST(SifImage, ReadsGroupsAndExt3Partitions) {
  Image image = Image::open(sif_fixture("images/two-groups.sif"));
  const Descriptor& ext3 = image.object(3);
  EXPECT_EQ(ext3.group_id(), 2u);
  EXPECT_EQ(ext3.partition().fs_type, FsType::Ext3);
  EXPECT_EQ(ext3.partition().part_type, PartType::System);
  EXPECT_EQ(ext3.partition().arch, "amd64");
  EXPECT_EQ(image.read_object(ext3), test::read_file(test::upstream_fixtures() + "/sif/input/root.ext3"));
}

TEST(SifImage, ReadsLegacyObjectLinksAndPaddedOffsets) {
  Image image = Image::open(sif_fixture("images/one-group-signed-legacy-all.sif"));
  EXPECT_EQ(image.header().data_offset, 32768);
  const Descriptor& sig = image.object(4);
  EXPECT_EQ(sig.offset, 45056);
  EXPECT_EQ(sig.linked_id(), 2u);
  EXPECT_FALSE(sig.linked_to_group());
  EXPECT_EQ(sig.signature().hash_type, HashType::Sha384);
  EXPECT_EQ(sig.name_text(), "part-signature");
  EXPECT_EQ(image.read_object(sig).rfind("-----BEGIN PGP SIGNED MESSAGE-----", 0), 0u);
}

TEST(SifImage, ReadsTypeSpecificExtras) {
  EXPECT_EQ(Image::open(sif_fixture("images/one-object-sbom.sif")).object(1).sbom_format(), SbomFormat::CycloneDxJson);
  auto crypt = Image::open(sif_fixture("images/one-object-crypt-message.sif")).object(1).crypto_message();
  EXPECT_EQ(crypt.format, FormatType::OpenPgp);
  EXPECT_EQ(crypt.message, MessageType::ClearSignature);
  Image blob = Image::open(sif_fixture("images/one-object-oci-blob.sif"));
  EXPECT_EQ(blob.object(1).data_type, DataType::OciBlob);
  EXPECT_EQ(blob.object(1).oci_digest().substr(0, 15), "sha256:a88b15e9");
  Image index = Image::open(sif_fixture("images/one-object-oci-root-index.sif"));
  EXPECT_EQ(index.object(1).data_type, DataType::OciRootIndex);
  EXPECT_EQ(index.object(1).oci_digest().substr(0, 15), "sha256:2dc692f0");
}

TEST(SifImage, ReadsObjectTimes) {
  Image image = Image::open(sif_fixture("images/one-object-time.sif"));
  EXPECT_EQ(image.header().created_at, 1593475316);
  EXPECT_EQ(image.object(1).created_at, 1593475316);
}

TEST(SifImage, UnknownIdIsAClearError) {
  Image image = Image::open(sif_fixture("images/one-group.sif"));
  try {
    image.object(7);
    FAIL() << "expected an error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("no object with ID 7"), std::string::npos) << e.what();
  }
}

TEST(SifImage, DetectsSifMagicLikeApptainer) {
  EXPECT_TRUE(looks_like_sif(sif_fixture("real/busybox_amd64.sif")));
  EXPECT_FALSE(looks_like_sif(test::upstream_fixtures() + "/sif/input/root.squashfs"));
  EXPECT_FALSE(looks_like_sif("/nonexistent/file.sif"));
}

}  // namespace
}  // namespace capsa::sif
