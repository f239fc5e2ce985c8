#include "image/pulled_sif.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "image/metadata.hpp"
#include "sif/image.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::image {
namespace {

PulledSifParts busybox_like_parts() {
  PulledSifParts parts;
  parts.squashfs_path = test::upstream_fixtures() + "/sif/input/root.squashfs";
  parts.source.config = {{"Env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
                         {"Cmd", {"sh"}}};
  parts.source.reference = "busybox:1.36";
  parts.source.architecture = "amd64";
  parts.source.build_time = 1700000000;
  parts.source.capsa_version = "0.1.0";
  return parts;
}

TEST(PulledSif, HasTheObjectsApptainerWritesInItsOrder) {
  test::TempDir dir;
  std::string out = dir / "busybox_1.36.sif";
  write_pulled_sif(out, busybox_like_parts());

  sif::Image image = sif::Image::open(out);
  EXPECT_EQ(image.header().launch_script_text(), "#!/usr/bin/env run-singularity\n");
  EXPECT_EQ(image.header().arch_name(), "amd64");
  auto objects = image.objects();
  ASSERT_EQ(objects.size(), 4u);
  EXPECT_EQ(objects[0].data_type, sif::DataType::Deffile);
  EXPECT_EQ(image.read_object(objects[0]), "bootstrap: docker\nfrom: busybox:1.36\n\n");
  EXPECT_EQ(objects[1].name_text(), "inspect-metadata.json");
  EXPECT_EQ(objects[2].name_text(), "oci-config.json");
  EXPECT_EQ(nlohmann::json::parse(image.read_object(objects[2]))["Cmd"][0], "sh");
  EXPECT_EQ(objects[3].data_type, sif::DataType::Partition);
  EXPECT_EQ(image.primary_partition()->id, 4u);
  for (const auto& d : objects) EXPECT_EQ(d.group_id(), 1u);

  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);

  // The reference tool reads it as Apptainer's own pulls.
  auto list = test::run_process({"siftool", "list", out});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("FS (Squashfs/*System/amd64)"), std::string::npos) << list.out;
}

TEST(PulledSif, InspectMetadataIsTheCompactAllJsonOfTheGeneratedFiles) {
  auto parts = busybox_like_parts();
  auto doc = nlohmann::json::parse(inspect_metadata_json(parts.source));
  EXPECT_EQ(doc["type"], "container");
  const auto& attributes = doc["data"]["attributes"];
  EXPECT_EQ(attributes["deffile"], "bootstrap: docker\nfrom: busybox:1.36");
  EXPECT_EQ(attributes["labels"]["org.label-schema.usage.singularity.deffile.from"], "busybox:1.36");
  EXPECT_NE(attributes["runscript"].get<std::string>().find("OCI_CMD='\"sh\"'"), std::string::npos);
  EXPECT_EQ(attributes["environment"]["/.singularity.d/env/10-docker2singularity.sh"],
            "#!/bin/sh\nexport PATH=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"");
  EXPECT_EQ(inspect_metadata_json(parts.source).find('\n'), std::string::npos);
}

TEST(PulledSif, ReproducibleImagesHaveNoUuid) {
  test::TempDir dir;
  auto parts = busybox_like_parts();
  parts.reproducible = true;
  write_pulled_sif(dir / "a.sif", parts);
  write_pulled_sif(dir / "b.sif", parts);
  EXPECT_TRUE(sif::Image::open(dir / "a.sif").header().uuid_is_nil());
  EXPECT_EQ(test::read_file(dir / "a.sif"), test::read_file(dir / "b.sif"));
}


// The squashfs written in place gives the very file that copying it in gives.
TEST(PulledSif, InPlacePartitionGivesTheSameFileAsACopiedOne) {
  test::TempDir dir;
  auto parts = busybox_like_parts();
  parts.reproducible = true;
  write_pulled_sif(dir / "copied.sif", parts);
  std::string squashfs = test::read_file(parts.squashfs_path);
  write_pulled_sif_in_place(dir / "in-place.sif", parts.source, true, [&](int fd, std::uint64_t offset) {
    write_all_at(fd, std::span(reinterpret_cast<const std::uint8_t*>(squashfs.data()), squashfs.size()), offset);
    return static_cast<std::uint64_t>(squashfs.size());
  });
  EXPECT_EQ(test::read_file(dir / "in-place.sif"), test::read_file(dir / "copied.sif"));
}

TEST(PulledSif, AFailedInPlaceWriteLeavesNothing) {
  test::TempDir dir;
  auto parts = busybox_like_parts();
  EXPECT_THROW(write_pulled_sif_in_place(dir / "out.sif", parts.source, false,
                                         [](int, std::uint64_t) -> std::uint64_t { throw FormatError("bad layer"); }),
               FormatError);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace capsa::image
