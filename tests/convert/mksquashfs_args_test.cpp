// --mksquashfs-args read into PackOptions: the options capsa's packer honours, and one
// line naming anything else. The images they make are checked in pack_test.cpp
// (MksquashfsArgsReachTheImage) and end to end in tests/build/build_test.cpp.
#include "convert/mksquashfs_args.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa::convert {
namespace {

PackOptions applied(const std::string& args) {
  PackOptions options;
  apply_mksquashfs_args(args, options);
  return options;
}

std::string error_of(const std::string& args) {
  try {
    applied(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MksquashfsArgs, CompressionBlockSizeLevelAndProcessors) {
  PackOptions options = applied("  -comp gzip -b 64K -Xcompression-level 9 -processors 3  ");
  EXPECT_EQ(options.compression, "gzip");
  EXPECT_EQ(options.block_size, 64u * 1024);
  EXPECT_EQ(options.level, 9);
  EXPECT_EQ(options.threads, 3u);
  EXPECT_EQ(applied("-block-size 1M").block_size, 1024u * 1024);
  EXPECT_EQ(applied("-b 4096").block_size, 4096u);
  // The level is checked against the compressor, whichever comes first.
  EXPECT_EQ(applied("-Xcompression-level 19 -comp zstd").level, 19);
}

TEST(MksquashfsArgs, NothingGivenChangesNothing) {
  PackOptions options = applied("");
  PackOptions defaults;
  EXPECT_EQ(options.compression, defaults.compression);
  EXPECT_EQ(options.block_size, defaults.block_size);
  EXPECT_FALSE(options.level);
  EXPECT_FALSE(options.force_uid);
}

TEST(MksquashfsArgs, OwnershipOptions) {
  PackOptions root = applied("-all-root");
  EXPECT_EQ(root.force_uid, 0u);
  EXPECT_EQ(root.force_gid, 0u);
  EXPECT_EQ(applied("-root-owned").force_uid, 0u);
  PackOptions forced = applied("-force-uid 1000 -force-gid 100");
  EXPECT_EQ(forced.force_uid, 1000u);
  EXPECT_EQ(forced.force_gid, 100u);
}

TEST(MksquashfsArgs, OptionsWithNothingToDoAreAccepted) {
  PackOptions options = applied("-noappend -no-xattrs -mem 2G -quiet -no-progress");
  EXPECT_EQ(options.compression, "zstd");
}

TEST(MksquashfsArgs, AnythingElseIsOneLineNamingIt) {
  for (const auto& [args, named] : std::vector<std::pair<std::string, std::string>>{
           {"-comp lz4", "-comp lz4"},
           {"-xattrs", "-xattrs"},
           {"-e /proc", "-e"},
           {"-b 3000", "power of two"},
           {"-b 2M", "power of two"},
           {"-b big", "\"big\" is not a number"},
           {"-processors", "-processors needs a value"},
           {"-comp xz -Xcompression-level 3", "does not apply to xz"},
           {"-comp gzip -Xcompression-level 12", "out of range for gzip"},
       }) {
    std::string error = error_of(args);
    EXPECT_EQ(error.rfind("--mksquashfs-args: ", 0), 0u) << args << ": " << error;
    EXPECT_NE(error.find(named), std::string::npos) << args << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace capsa::convert
