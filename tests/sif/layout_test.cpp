#include "sif/layout.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "util/error.hpp"

namespace capsa::sif {
namespace {

TEST(SifLayout, HeaderRoundTripsAndPlacesFieldsAtTheirOffsets) {
  Header h;
  std::memcpy(h.launch_script.data(), "#!/x\n", 5);
  std::memcpy(h.magic.data(), kMagic.data(), kMagic.size());
  std::memcpy(h.version.data(), kVersion.data(), 3);
  h.arch = {'0', '2', '\0'};
  h.uuid[0] = 0xAB;
  h.created_at = -62135596800;
  h.modified_at = 7;
  h.descriptors_free = 47;
  h.descriptors_total = 48;
  h.descriptors_offset = 4096;
  h.descriptors_size = 28080;
  h.data_offset = 32176;
  h.data_size = 0x0102030405060708;

  auto bytes = encode_header(h);
  EXPECT_EQ(std::memcmp(bytes.data() + 32, "SIF_MAGIC", 9), 0);
  EXPECT_EQ(bytes[45], '0');
  EXPECT_EQ(bytes[46], '2');
  EXPECT_EQ(bytes[48], 0xAB);
  EXPECT_EQ(bytes[72], 7);
  EXPECT_EQ(bytes[120], 0x08);  // little-endian data size
  EXPECT_EQ(bytes[127], 0x01);

  Header back = decode_header(bytes);
  EXPECT_EQ(encode_header(back), bytes);
  EXPECT_EQ(back.arch_name(), "amd64");
  EXPECT_EQ(back.launch_script_text(), "#!/x\n");
}

TEST(SifLayout, DescriptorRoundTripsWithGroupMaskAndExtras) {
  Descriptor d;
  d.data_type = DataType::Partition;
  d.used = true;
  d.id = 2;
  d.raw_group_id = 1 | kGroupMask;
  d.raw_linked_id = 3 | kGroupMask;
  d.offset = 36864;
  d.size = 4096;
  d.size_with_padding = 4688;
  d.set_name("squashfs-1");
  d.set_partition(FsType::Squashfs, PartType::PrimSys, "riscv64");

  auto bytes = encode_descriptor(d);
  EXPECT_EQ(bytes[0], 0x04);  // 0x4004
  EXPECT_EQ(bytes[1], 0x40);
  EXPECT_EQ(bytes[4], 1);     // used
  EXPECT_EQ(bytes[12], 0xF0);  // group mask in the top byte
  EXPECT_EQ(bytes[73], 's');   // name
  EXPECT_EQ(bytes[201], 1);    // fstype
  EXPECT_EQ(bytes[205], 2);    // parttype
  EXPECT_EQ(bytes[209], '1');  // arch "12"
  EXPECT_EQ(bytes[210], '2');

  Descriptor back = decode_descriptor(bytes);
  EXPECT_EQ(back.group_id(), 1u);
  EXPECT_EQ(back.linked_id(), 3u);
  EXPECT_TRUE(back.linked_to_group());
  EXPECT_EQ(back.partition().part_type, PartType::PrimSys);
  EXPECT_EQ(back.partition().arch, "riscv64");
  EXPECT_EQ(back.name_text(), "squashfs-1");
  EXPECT_EQ(encode_descriptor(back), bytes);
}

TEST(SifLayout, NamesMatchTheReferenceTool) {
  EXPECT_EQ(name_of(DataType::Deffile), "Def.FILE");
  EXPECT_EQ(name_of(static_cast<DataType>(0x4100)), "Unknown");
  EXPECT_EQ(name_of(PartType::PrimSys), "*System");
  EXPECT_EQ(name_of(HashType::Sha384), "SHA-384");
  EXPECT_EQ(name_of(static_cast<SbomFormat>(99)), "unknown");
  EXPECT_EQ(arch_name_from_code(std::string("13\0", 3)), "loong64");
  EXPECT_EQ(arch_name_from_code(std::string("99\0", 3)), "unknown");
  EXPECT_EQ(arch_code_from_name("s390x"), "11");
  EXPECT_EQ(arch_code_from_name("vax"), "00");
}

TEST(SifLayout, OverlongNamesAreRejected) {
  Descriptor d;
  EXPECT_THROW(d.set_name(std::string(129, 'x')), FormatError);
  EXPECT_NO_THROW(d.set_name(std::string(128, 'x')));
}

}  // namespace
}  // namespace capsa::sif
