// The squashfs written into an existing file at a byte offset (a SIF's partition) is
// the same image as the one written to a file of its own, and readable in place.
#include <fcntl.h>

#include <cstdio>

#include "convert_fixture.hpp"
#include "squashfs/reader.hpp"
#include "support/process.hpp"
#include "util/fd.hpp"

namespace capsa::convert::test {
namespace {

constexpr std::uint64_t kOffset = 40960;
const std::string kPrefix(kOffset, 'P');  // bytes before the image must survive

TEST_F(ConvertTest, ImageWrittenAtAnOffsetEqualsTheStandaloneImage) {
  std::string blob = layer({{.name = "etc", .type = "dir"},
                            {.name = "etc/hello", .data = "hello world\n"},
                            {.name = "big", .data = std::string(300000, 'x') + "end"}});
  ConvertOptions options;
  options.source_date_epoch = 1700000000;
  ConversionResult alone = convert({blob}, {}, options);

  std::string host = dir_ / "host.bin";
  UniqueFd fd = open_file(host, O_RDWR | O_CREAT | O_TRUNC, 0644);
  write_all_at(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(kPrefix.data()), kPrefix.size()), 0);
  ConversionResult inside = layers_to_squashfs({{blob, std::nullopt, "layer"}}, {}, fd.get(), kOffset, host, options);

  EXPECT_TRUE(inside.output_path.empty());
  EXPECT_EQ(inside.output_bytes, alone.output_bytes);
  EXPECT_EQ(inside.file_count, alone.file_count);
  std::string bytes = capsa::test::read_file(host);
  ASSERT_EQ(bytes.size(), kOffset + inside.output_bytes) << "the file ends where the image does";
  EXPECT_EQ(bytes.substr(0, kOffset), kPrefix);
  EXPECT_TRUE(bytes.substr(kOffset) == capsa::test::read_file(output_)) << "same image, byte for byte";

  squashfs::Reader reader(fd.get(), kOffset, inside.output_bytes, host);
  EXPECT_EQ(reader.read_file("/etc/hello"), "hello world\n");
  EXPECT_EQ(reader.read_file("/big"), std::string(300000, 'x') + "end");
}

TEST_F(ConvertTest, ImageAtAnOffsetIsReadByRdsquashfsOnceCutOut) {
  std::string blob = layer({{.name = "a", .data = "alpha"}});
  std::string host = dir_ / "host.bin";
  UniqueFd fd = open_file(host, O_RDWR | O_CREAT | O_TRUNC, 0644);
  ConversionResult inside = layers_to_squashfs({{blob, std::nullopt, "layer"}}, {}, fd.get(), kOffset, host);
  std::string image = capsa::test::read_file(host).substr(kOffset);
  std::string cut = dir_ / "cut.sqfs";
  std::FILE* f = std::fopen(cut.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(image.data(), 1, image.size(), f);
  std::fclose(f);
  auto r = capsa::test::run_process({"rdsquashfs", "--cat", "/a", cut});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "alpha");
  EXPECT_EQ(image.size(), inside.output_bytes);
}

}  // namespace
}  // namespace capsa::convert::test
