// capsa's gzip block decompressor (libdeflate) against blocks zlib compressed, as
// mksquashfs and libsquashfs write them; whole images go through it in reader_test.cpp.
#include "squashfs/gzip_decompressor.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "squashfs/image.hpp"
#include "squashfs/zstd_decompressor.hpp"
#include "util/fd.hpp"

namespace capsa::squashfs {
namespace {

constexpr std::uint32_t kBlockSize = 131072;

std::vector<std::uint8_t> zlib_block(const std::string& data) {
  uLongf size = compressBound(data.size());
  std::vector<std::uint8_t> out(size);
  EXPECT_EQ(compress2(out.data(), &size, reinterpret_cast<const Bytef*>(data.data()), data.size(), 9), Z_OK);
  out.resize(size);
  return out;
}

// Text with enough variety that the stream has both literals and matches.
std::string sample(std::size_t size) {
  std::string data;
  for (std::uint32_t i = 0; data.size() < size; ++i) data += "line " + std::to_string(i * 2654435761u % 100003) + "\n";
  data.resize(size);
  return data;
}

sqfs_s32 inflate(sqfs_compressor_t* d, const std::vector<std::uint8_t>& in, std::vector<std::uint8_t>& out) {
  return d->do_block(d, in.data(), static_cast<sqfs_u32>(in.size()), out.data(), static_cast<sqfs_u32>(out.size()));
}

TEST(GzipDecompressor, InflatesWholeAndShortBlocks) {
  CompressorPtr d = make_gzip_decompressor(kBlockSize);
  for (std::size_t size : {std::size_t{kBlockSize}, std::size_t{5000}, std::size_t{1}}) {
    SCOPED_TRACE(size);
    const std::string data = sample(size);
    std::vector<std::uint8_t> out(kBlockSize);
    ASSERT_EQ(inflate(d.get(), zlib_block(data), out), static_cast<sqfs_s32>(size));
    EXPECT_EQ(std::string(out.begin(), out.begin() + static_cast<long>(size)), data);
  }
}

TEST(GzipDecompressor, RefusesCorruptBlocksAndBlocksTooLargeForTheBuffer) {
  CompressorPtr d = make_gzip_decompressor(kBlockSize);
  std::vector<std::uint8_t> block = zlib_block(sample(kBlockSize));
  std::vector<std::uint8_t> out(kBlockSize);
  std::vector<std::uint8_t> small(kBlockSize / 2);
  EXPECT_EQ(inflate(d.get(), block, small), SQFS_ERROR_COMPRESSOR) << "larger than the buffer";
  std::vector<std::uint8_t> cut(block.begin(), block.begin() + static_cast<long>(block.size() / 2));
  EXPECT_EQ(inflate(d.get(), cut, out), SQFS_ERROR_COMPRESSOR) << "cut in half";
  std::vector<std::uint8_t> wrong_checksum = block;
  wrong_checksum.back() ^= 0xff;  // the Adler-32 at the stream's end
  EXPECT_EQ(inflate(d.get(), wrong_checksum, out), SQFS_ERROR_COMPRESSOR) << "a wrong checksum";
  EXPECT_EQ(inflate(d.get(), block, out), static_cast<sqfs_s32>(kBlockSize)) << "still usable after errors";
}

TEST(GzipDecompressor, DescribesItselfAsGzipAndCopies) {
  CompressorPtr d = make_gzip_decompressor(kBlockSize);
  sqfs_compressor_config_t config{};
  d->get_configuration(d.get(), &config);
  EXPECT_EQ(config.id, SQFS_COMP_GZIP);
  EXPECT_EQ(config.block_size, kBlockSize);
  EXPECT_NE(config.flags & SQFS_COMP_FLAG_UNCOMPRESS, 0);
  CompressorPtr copy(reinterpret_cast<sqfs_compressor_t*>(d->base.copy(&d->base)));
  ASSERT_TRUE(copy);
  std::vector<std::uint8_t> out(kBlockSize);
  EXPECT_EQ(inflate(copy.get(), zlib_block("copied"), out), 6);
}

// The reader tests pass with libsquashfs's own decompressors too: this checks that an
// image hands out capsa's (their block function is the one capsa's objects carry).
TEST(GzipDecompressor, IsWhatGzipImagesUseAsZstdImagesUseTheirs) {
  const std::string corpus = std::string(CAPSA_FUZZ_CORPUS) + "/fuse_server/";
  struct Case {
    const char* file;
    CompressorPtr (*make)(std::uint32_t);
  };
  for (const Case& c : {Case{"small-blocks-gzip.sqfs", make_gzip_decompressor},
                        Case{"small-blocks-zstd.sqfs", make_zstd_decompressor}}) {
    SCOPED_TRACE(c.file);
    const std::string path = corpus + c.file;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd);
    Image image(fd.get(), 0, std::filesystem::file_size(path), path);
    CompressorPtr used = image.make_decompressor();
    EXPECT_EQ(used->do_block, c.make(kBlockSize)->do_block);
  }
  CompressorPtr gzip = make_gzip_decompressor(kBlockSize);
  CompressorPtr zstd = make_zstd_decompressor(kBlockSize);
  EXPECT_NE(gzip->do_block, zstd->do_block) << "the comparison above tells the codecs apart";
}

}  // namespace
}  // namespace capsa::squashfs
