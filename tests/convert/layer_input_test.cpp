// Layer blobs as they come from a registry: compression sniffed, diff_ids computed and
// checked, broken blobs rejected without leaving output behind; and the image itself
// checked by the squashfs-tools readers.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <span>

#include "convert_fixture.hpp"
#include "support/process.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::convert::test {
namespace {

using capsa::test::read_file;
using capsa::test::run_process;

std::string sha256_of(const std::string& data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr);
  std::string hex = "sha256:";
  for (unsigned int i = 0; i < length; ++i) {
    char pair[3];
    std::snprintf(pair, sizeof pair, "%02x", digest[i]);
    hex += pair;
  }
  return hex;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Runs `body`, which must throw FormatError mentioning every phrase.
template <typename Body>
void expect_format_error(Body&& body, const std::vector<std::string>& phrases) {
  try {
    body();
    ADD_FAILURE() << "no FormatError";
  } catch (const FormatError& e) {
    for (const auto& phrase : phrases) EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

const std::vector<Entry> kSample = {{"etc", "dir"}, {"etc/os-release", "file", "ID=test\n"}, {"big", "file", ""}};

TEST_F(ConvertTest, PlainGzipAndZstdLayersGiveTheSameImageAndDiffId) {
  std::vector<Entry> entries = kSample;
  entries[2].data = std::string(300000, 'x') + "end";  // several blocks
  auto plain = layer(entries, "plain");
  auto gz = layer(entries, "gzip");
  auto zst = layer(entries, "zstd");
  std::string expected = sha256_of(read_file(plain));
  for (const auto& blob : {plain, gz, zst}) {
    std::vector<LayerInput> inputs{{blob, expected, "the layer"}};
    auto result = layers_to_squashfs(inputs, {}, output_);
    EXPECT_EQ(result.diff_ids, std::vector<std::string>{expected}) << blob;
    EXPECT_EQ(read("/etc/os-release"), "ID=test\n") << blob;
    EXPECT_EQ(read("/big"), entries[2].data) << blob;
  }
}

TEST_F(ConvertTest, DiffIdMismatchNamesTheLayerAndLeavesNoOutput) {
  auto gz = layer(kSample);
  std::string wrong = "sha256:" + std::string(64, '0');
  std::vector<LayerInput> inputs{{gz, std::nullopt, "base"}, {gz, wrong, "sha256:feed"}};
  expect_format_error([&] { layers_to_squashfs(inputs, {}, output_); }, {"layer 2/2 (sha256:feed)", wrong});
  EXPECT_FALSE(exists(output_));
  EXPECT_EQ(run_process({"sh", "-c", "ls -A \"$0\" | grep -c capsa-tmp", dir_.path()}).out, "0\n");
}

TEST_F(ConvertTest, TruncatedLayerIsAFormatError) {
  std::vector<Entry> entries = kSample;
  entries[2].data = std::string(200000, 'y');
  for (const char* compression : {"gzip", "zstd", "plain"}) {
    std::string full = read_file(layer(entries, compression));
    std::string cut = dir_.write(std::string("cut.") + compression, full.substr(0, full.size() / 2));
    expect_format_error([&] { convert({cut}); }, {"layer 1/1 (cut."});
    EXPECT_FALSE(exists(output_)) << compression;
  }
}

TEST_F(ConvertTest, NotATarLayerIsAFormatError) {
  std::string text = dir_.write("notes.txt", std::string(2000, 'n'));
  expect_format_error([&] { convert({text}); }, {"notes.txt"});
  std::string gz_text = dir_ / "notes.gz";
  run_process({"sh", "-c", "gzip -c < \"$0\" > \"$1\"", text, gz_text});
  expect_format_error([&] { convert({gz_text}); }, {"notes.gz"});
  EXPECT_FALSE(exists(output_));
}

TEST_F(ConvertTest, MissingLayerFileIsASystemError) {
  EXPECT_THROW(convert({dir_ / "absent.tar.gz"}), SystemError);
  EXPECT_FALSE(exists(output_));
}

TEST_F(ConvertTest, ImageIsReadableBySquashfsToolsAndSqfs2tar) {
  auto l1 = layer({{"usr", "dir"}, {"usr/bin", "dir"}, {"usr/bin/tool", "file", std::string(500000, 't'), 0755},
                   {"usr/bin/alias", "hardlink", "", -1, 0, 0, "usr/bin/tool"},
                   {"bin", "symlink", "", 0777, 0, 0, "usr/bin"}, {"empty", "file", ""}});
  for (Compressor c : {Compressor::Zstd, Compressor::Gzip, Compressor::Xz}) {
    ConvertOptions options;
    options.compressor = c;
    options.workers = 2;
    auto result = convert({l1}, {}, options);
    EXPECT_EQ(result.file_count, 2u);    // tool (with its alias) and empty
    EXPECT_EQ(result.inode_count, 6u);   // + root, usr, usr/bin, bin
    auto listing = run_process({"unsquashfs", "-lln", output_});
    EXPECT_EQ(listing.exit_code, 0) << static_cast<int>(c) << listing.err;
    EXPECT_NE(listing.out.find("500000 2023-11-14 22:13 squashfs-root/usr/bin/tool"), std::string::npos) << listing.out;
    auto tar = run_process({"sh", "-c", "sqfs2tar \"$0\" | tar -tvf -", output_});
    EXPECT_EQ(tar.exit_code, 0) << tar.err;
    EXPECT_NE(tar.out.find("usr/bin/tool link to usr/bin/alias"), std::string::npos) << tar.out;
    EXPECT_NE(tar.out.find("bin -> usr/bin"), std::string::npos) << tar.out;
    auto check = run_process({"sh", "-c", "rdsquashfs -c usr/bin/tool \"$0\" | cmp - \"$1\"", output_,
                              dir_.write("expected", std::string(500000, 't'))});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
}

TEST_F(ConvertTest, CompressorAndLevelAreRecordedAndBadLevelsRefused) {
  auto l1 = layer(kSample);
  for (auto [compressor, name] : {std::pair{Compressor::Zstd, "zstd"}, {Compressor::Gzip, "gzip"}, {Compressor::Xz, "xz"}}) {
    ConvertOptions options;
    options.compressor = compressor;
    convert({l1}, {}, options);
    auto super = run_process({"unsquashfs", "-s", output_});
    EXPECT_NE(super.out.find(std::string("Compression ") + name), std::string::npos) << super.out;
  }
  ConvertOptions bad;
  bad.compressor = Compressor::Gzip;
  bad.level = 42;
  std::remove(output_.c_str());
  try {
    convert({l1}, {}, bad);
    ADD_FAILURE() << "gzip level 42 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gzip at level 42"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(exists(output_));
}

TEST_F(ConvertTest, DuplicateSmallFilesShareTheirFragment) {
  std::string licence(3000, 'L');
  std::string other = licence;
  other[1500] = 'X';  // same size, one byte differs
  auto l1 = layer({{"a", "file", licence}, {"b", "file", licence}, {"c", "file", other}});
  convert({l1});
  auto fragment = [&](const std::string& path) {
    auto stat = run_process({"rdsquashfs", "--stat", path, output_});
    auto at = stat.out.find("Fragment offset: ");
    return at == std::string::npos ? std::string("none") : stat.out.substr(at, stat.out.find('\n', at) - at);
  };
  EXPECT_EQ(fragment("a"), fragment("b"));
  EXPECT_NE(fragment("a"), fragment("c"));
  EXPECT_EQ(read("/b"), licence);
  EXPECT_EQ(read("/c"), other);
}

// GNU tar writes real sparse maps (PAX GNU.sparse.*); libarchive reads them.
TEST_F(ConvertTest, SparseFilesAreFilledAndHugeOnesStoredEmpty) {
  capsa::test::TempDir tree;
  auto sparse_file = [&](const std::string& name, off_t size, const std::string& head, const std::string& tail) {
    UniqueFd fd = open_file(tree / name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(::ftruncate(fd.get(), size), 0);
    write_all_at(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(head.data()), head.size()), 0);
    write_all_at(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(tail.data()), tail.size()),
                 static_cast<std::uint64_t>(size) - tail.size());
  };
  sparse_file("small", 1 << 20, "head", "tail");
  sparse_file("lastlog", off_t{3} << 30, "x", "y");
  std::string blob = dir_ / "sparse.tar";
  auto tar = run_process({"tar", "--format=pax", "--sparse", "-C", tree.path(), "-cf", blob, "small", "lastlog"});
  ASSERT_EQ(tar.exit_code, 0) << tar.err;
  auto result = convert({blob});
  std::string expected = "head" + std::string((1 << 20) - 8, '\0') + "tail";
  EXPECT_TRUE(read("/small") == expected);
  EXPECT_EQ(read("/lastlog"), "");
  EXPECT_TRUE(contains_line_with(result.warnings, "lastlog", "stored empty"));
}

TEST_F(ConvertTest, ThrowingFromProgressCancelsAndLeavesNothing) {
  std::vector<Entry> entries = kSample;
  entries[2].data = std::string(3 << 20, 'z');
  auto l1 = layer(entries, "plain");
  ConvertOptions options;
  options.progress = [](const Progress&) { throw Error("cancelled"); };
  EXPECT_THROW(convert({l1}, {}, options), Error);
  EXPECT_FALSE(exists(output_));
  EXPECT_EQ(run_process({"sh", "-c", "ls -A \"$0\" | grep -c capsa-tmp", dir_.path()}).out, "0\n");
}

TEST_F(ConvertTest, ProgressCountsEveryBlobByte) {
  auto l1 = layer(kSample);
  auto l2 = layer({{"x", "file", "x"}}, "zstd");
  std::uint64_t total = read_file(l1).size() + read_file(l2).size();
  ConvertOptions options;
  std::vector<Progress> seen;
  options.progress = [&](const Progress& p) { seen.push_back(p); };
  convert({l1, l2}, {}, options);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().input_bytes_done, total);
  EXPECT_EQ(seen.back().input_bytes_total, total);
}

// Decompression bombs: the files' declared sizes, over all layers, hidden files included,
// are checked against max_unpacked_bytes at each header, before the data is read.
TEST_F(ConvertTest, UnpackedSizeLimitRefusesAtTheHeaderThatCrossesIt) {
  auto lower = layer({{"a", "file", std::string(3140, 'a')}});
  auto upper = layer({{"b", "file", std::string(3000, 'b')}, {"a", "file", std::string(10, 'x')}});
  ConvertOptions options;
  options.max_unpacked_bytes = 6144;  // 3010 bytes above, then the hidden 3140 below
  expect_format_error([&] { convert({lower, upper}, {}, options); },
                      {"layer 1/2", "a: the image's files add up to more than 6 KiB, the limit for an unpacked image",
                       "CAPSA_MAX_UNPACKED_SIZE"});
  EXPECT_FALSE(exists(output_));
  options.max_unpacked_bytes = 6150;
  EXPECT_NO_THROW(convert({lower, upper}, {}, options));
  options.max_unpacked_bytes = std::nullopt;
  EXPECT_NO_THROW(convert({lower, upper}, {}, options));
}

// A sparse file counts by the data it stores, not by its holes.
TEST_F(ConvertTest, UnpackedSizeLimitChargesSparseFilesByTheirData) {
  capsa::test::TempDir tree;
  auto sparse_file = [&](const std::string& name, off_t size, std::size_t data_bytes) {
    UniqueFd fd = open_file(tree / name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_EQ(::ftruncate(fd.get(), size), 0);
    std::string data(data_bytes, 'd');
    write_all_at(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()), 0);
  };
  sparse_file("holes", 8 << 20, 4096);
  sparse_file("data", 8 << 20, 64 << 10);
  std::string holes = dir_ / "holes.tar", data = dir_ / "data.tar";
  ASSERT_EQ(run_process({"tar", "--format=pax", "--sparse", "-C", tree.path(), "-cf", holes, "holes"}).exit_code, 0);
  ASSERT_EQ(run_process({"tar", "--format=pax", "--sparse", "-C", tree.path(), "-cf", data, "data"}).exit_code, 0);
  ConvertOptions options;
  options.max_unpacked_bytes = 32 << 10;
  EXPECT_NO_THROW(convert({holes}, {}, options)) << "8 MiB of holes, 4 KiB of data";
  expect_format_error([&] { convert({data}, {}, options); }, {"data: the image's files add up to more than 32 KiB"});
}

TEST(UnpackedSizeLimit, ReadFromTheEnvironment) {
  auto with = [](const char* value) {
    if (value) ::setenv("CAPSA_MAX_UNPACKED_SIZE", value, 1);
    else ::unsetenv("CAPSA_MAX_UNPACKED_SIZE");
    return max_unpacked_bytes_from_environment();
  };
  EXPECT_EQ(with(nullptr), kDefaultMaxUnpackedBytes);
  EXPECT_EQ(with(""), kDefaultMaxUnpackedBytes);
  EXPECT_EQ(with("4096"), 4096u);
  EXPECT_EQ(with("2K"), 2048u);
  EXPECT_EQ(with("3M"), 3u << 20);
  EXPECT_EQ(with("1G"), 1u << 30);
  EXPECT_EQ(with("2T"), 2ull << 40);
  EXPECT_EQ(with("0"), std::nullopt);
  for (const char* bad : {"x", "1X", "-1", "1.5G", "99999999999T"}) EXPECT_THROW(with(bad), Error) << bad;
  ::unsetenv("CAPSA_MAX_UNPACKED_SIZE");
}

}  // namespace
}  // namespace capsa::convert::test
