#include "sif/writer.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "sif/image.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::sif {
namespace {

using test::TempDir;

ObjectInput bytes_input(DataType type, std::string data) {
  ObjectInput input;
  input.type = type;
  input.data = std::move(data);
  return input;
}

std::string squashfs_fixture() { return test::upstream_fixtures() + "/sif/input/root.squashfs"; }

TEST(SifWriter, CreatesAnImageLikeApptainerLaysItOut) {
  TempDir dir;
  std::string path = dir / "out.sif";
  CreateOptions options;
  options.time = 1700000000;
  ObjectInput def = bytes_input(DataType::Deffile, "bootstrap: docker\nfrom: busybox\n\n");
  ObjectInput json = bytes_input(DataType::GenericJson, "{}");
  json.name = "oci-config.json";
  ObjectInput part = partition_input(squashfs_fixture(), FsType::Squashfs, PartType::PrimSys, "amd64");
  create(path, options, {def, json, part});

  Image image = Image::open(path);
  const Header& h = image.header();
  EXPECT_EQ(h.launch_script_text(), "#!/usr/bin/env run-singularity\n");
  EXPECT_EQ(h.arch_name(), "amd64");
  EXPECT_FALSE(h.uuid_is_nil());
  EXPECT_EQ(h.descriptors_free, 45);
  EXPECT_EQ(h.data_offset, 32176);
  auto objects = image.objects();
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[0].offset, 32176);  // non-partitions are not aligned
  EXPECT_EQ(objects[1].offset, 32176 + 33);
  EXPECT_EQ(objects[2].offset % 4096, 0);  // partitions are
  EXPECT_EQ(objects[2].offset, 32768);
  EXPECT_EQ(objects[2].size_with_padding, 32768 - (32176 + 35) + 4096);
  EXPECT_EQ(h.data_size, objects[2].offset + objects[2].size - h.data_offset);
  EXPECT_EQ(image.file_size(), static_cast<std::uint64_t>(h.data_offset + h.data_size));
  EXPECT_EQ(objects[1].name_text(), "oci-config.json");
  EXPECT_EQ(objects[0].group_id(), 1u);
  EXPECT_EQ(objects[0].created_at, 1700000000);
  EXPECT_EQ(image.read_object(objects[2]), test::read_file(squashfs_fixture()));
  EXPECT_EQ(image.primary_partition()->id, 3u);

  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR) << "a SIF is executable";
}

TEST(SifWriter, AddReusesTheFirstFreeSlotAndUpdatesTheHeader) {
  TempDir dir;
  std::string path = dir / "out.sif";
  create(path, CreateOptions{}, {bytes_input(DataType::Generic, "a"), bytes_input(DataType::Generic, "b")});
  delete_object(path, 1, DeleteOptions{}, 5);
  std::uint32_t id = add_object(path, bytes_input(DataType::Labels, "{\"k\":\"v\"}"), 42);
  EXPECT_EQ(id, 1u);
  Image image = Image::open(path);
  EXPECT_EQ(image.header().modified_at, 42);
  EXPECT_EQ(image.header().descriptors_free, 46);
  EXPECT_EQ(image.read_object(image.object(1)), "{\"k\":\"v\"}");
  EXPECT_EQ(image.object(1).offset, 32176 + 2) << "appended after the existing data";
}

TEST(SifWriter, RefusesASecondPrimaryPartition) {
  TempDir dir;
  std::string path = dir / "out.sif";
  create(path, CreateOptions{}, {partition_input(squashfs_fixture(), FsType::Squashfs, PartType::PrimSys, "amd64")});
  EXPECT_THROW(add_object(path, partition_input(squashfs_fixture(), FsType::Squashfs, PartType::PrimSys, "arm64"), 1),
               FormatError);
  EXPECT_EQ(Image::open(path).objects().size(), 1u);
}

TEST(SifWriter, RefusesToAddWhenEverySlotIsUsed) {
  TempDir dir;
  std::string path = dir / "out.sif";
  CreateOptions options;
  options.descriptor_capacity = 1;
  create(path, options, {bytes_input(DataType::Generic, "a")});
  EXPECT_THROW(add_object(path, bytes_input(DataType::Generic, "b"), 1), FormatError);
}

TEST(SifWriter, DeleteWithCompactTruncatesTheLastObject) {
  TempDir dir;
  std::string path = dir / "out.sif";
  create(path, CreateOptions{}, {bytes_input(DataType::Generic, "keep"),
                                 partition_input(squashfs_fixture(), FsType::Squashfs, PartType::PrimSys, "amd64")});
  EXPECT_THROW(delete_object(path, 1, DeleteOptions{.zero = false, .compact = true}, 1), FormatError);
  delete_object(path, 2, DeleteOptions{.zero = true, .compact = true}, 1);
  Image image = Image::open(path);
  EXPECT_EQ(image.file_size(), 32176u + 4);
  EXPECT_EQ(image.header().arch_name(), "unknown") << "removing the primary partition clears the header arch";
  EXPECT_EQ(image.objects().size(), 1u);
}

TEST(SifWriter, DeleteWithZeroOverwritesTheData) {
  TempDir dir;
  std::string path = dir / "out.sif";
  create(path, CreateOptions{}, {bytes_input(DataType::Generic, "secret"), bytes_input(DataType::Generic, "x")});
  delete_object(path, 1, DeleteOptions{.zero = true, .compact = false}, 1);
  std::string bytes = test::read_file(path);
  EXPECT_EQ(bytes.find("secret"), std::string::npos);
  EXPECT_EQ(bytes.substr(32176, 6), std::string(6, '\0'));
}

TEST(SifWriter, SetPrimaryMovesThePrimaryFlagAndTheHeaderArch) {
  TempDir dir;
  std::string path = dir / "out.sif";
  create(path, CreateOptions{}, {partition_input(squashfs_fixture(), FsType::Squashfs, PartType::PrimSys, "amd64"),
                                 partition_input(squashfs_fixture(), FsType::Squashfs, PartType::System, "arm64"),
                                 partition_input(squashfs_fixture(), FsType::Raw, PartType::Data, "arm64")});
  set_primary_partition(path, 2, 9);
  Image image = Image::open(path);
  EXPECT_EQ(image.primary_partition()->id, 2u);
  EXPECT_EQ(image.object(1).partition().part_type, PartType::System);
  EXPECT_EQ(image.object(1).partition().arch, "amd64");
  EXPECT_EQ(image.header().arch_name(), "arm64");
  EXPECT_THROW(set_primary_partition(path, 3, 9), FormatError) << "a Data partition cannot be primary";
}

TEST(SifWriter, FailedCreateLeavesNoFile) {
  TempDir dir;
  std::string path = dir / "out.sif";
  ObjectInput missing = partition_input(dir / "no-such.squashfs", FsType::Squashfs, PartType::PrimSys, "amd64");
  EXPECT_THROW(create(path, CreateOptions{}, {missing}), SystemError);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(SifWriter, DeterministicImagesAreByteIdentical) {
  TempDir dir;
  CreateOptions options;
  options.uuid = Uuid{};
  options.time = kZeroTime;
  std::vector<ObjectInput> objects{bytes_input(DataType::Deffile, "x"),
                                   partition_input(squashfs_fixture(), FsType::Squashfs, PartType::PrimSys, "amd64")};
  create(dir / "a.sif", options, objects);
  create(dir / "b.sif", options, objects);
  EXPECT_EQ(test::read_file(dir / "a.sif"), test::read_file(dir / "b.sif"));
}


// The partition written in place through a slot gives the same file, byte for byte, as
// create() copying it from a file of its own.
TEST(SifPartitionSlot, InPlacePartitionMatchesACopiedOne) {
  TempDir dir;
  CreateOptions options;
  options.uuid = Uuid{};
  options.time = 1700000000;
  std::vector<ObjectInput> leading{bytes_input(DataType::Deffile, "bootstrap: docker\nfrom: busybox\n\n"),
                                   bytes_input(DataType::GenericJson, "{}")};
  std::vector<ObjectInput> all = leading;
  all.push_back(partition_input(squashfs_fixture(), FsType::Squashfs, PartType::PrimSys, "amd64"));
  create(dir / "copied.sif", options, all);

  std::string squashfs = test::read_file(squashfs_fixture());
  std::string path = dir / "slot.sif";
  {
    PartitionSlot slot(path, options, leading, partition_input("", FsType::Squashfs, PartType::PrimSys, "amd64"));
    EXPECT_EQ(slot.offset(), 32768);
    // More than the partition is written: finish() cuts what lies past its size.
    std::string written = squashfs + "trailing garbage";
    write_all_at(slot.fd(), std::span(reinterpret_cast<const std::uint8_t*>(written.data()), written.size()),
                 static_cast<std::uint64_t>(slot.offset()));
    EXPECT_FALSE(std::filesystem::exists(path)) << "nothing under the final name before finish()";
    EXPECT_THROW(Image::open(slot.temp_path()), FormatError) << "an unfinished slot is not a SIF";
    slot.finish(static_cast<std::int64_t>(squashfs.size()));
  }
  EXPECT_EQ(test::read_file(path), test::read_file(dir / "copied.sif"));
  EXPECT_EQ(Image::open(path).primary_partition()->id, 3u);

  auto listed = test::run_process({"siftool", "list", path});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("Squashfs"), std::string::npos) << listed.out;
}

TEST(SifPartitionSlot, UnfinishedSlotLeavesNoFile) {
  TempDir dir;
  {
    PartitionSlot slot(dir / "out.sif", CreateOptions{}, {bytes_input(DataType::Deffile, "x")},
                       partition_input("", FsType::Squashfs, PartType::PrimSys, "amd64"));
    std::string data(8192, 'z');
    write_all_at(slot.fd(), std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()),
                 static_cast<std::uint64_t>(slot.offset()));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace capsa::sif
