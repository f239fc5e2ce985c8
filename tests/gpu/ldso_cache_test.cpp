// The ld.so cache reader on caches written by the real ldconfig, and on broken ones.
#include <gtest/gtest.h>

#include "fake_driver.hpp"
#include "runtime/gpu/ldso_cache.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::runtime::gpu {
namespace {

std::string find(const std::vector<CacheEntry>& entries, const std::string& name) {
  for (const auto& e : entries)
    if (e.name == name) return e.path;
  return "";
}

TEST(LdsoCache, ReadsTheEntriesLdconfigWrote) {
  auto entries = parse_ldso_cache(test::read_file(test::fake_cache()));
  EXPECT_EQ(find(entries, "libcuda.so.1"), test::fake_nvidia("lib/libcuda.so.1"));
  EXPECT_EQ(find(entries, "libnvidia-ml.so.1"), test::fake_nvidia("lib/libnvidia-ml.so.1"));
  EXPECT_FALSE(find(entries, "libc.so.6").empty());  // the default directories are in it too
}

// A hand-made cache (the fuzz seed, which `ldconfig -p -C` lists as 3 libraries): only
// the x86-64 libc6 entries are this process's; the plain libc6 (32-bit) one is not.
TEST(LdsoCache, OnlyEntriesOfOurOwnAbiAreTaken) {
  auto entries = parse_ldso_cache(
      test::read_file(std::string(CAPSA_TEST_SOURCE_DIR) + "/tests/fuzz/corpus/ldso_cache/three-entries"));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "libcuda.so.1");
  EXPECT_EQ(entries[0].path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(entries[1].path, "/lib/x86_64-linux-gnu/libc.so.6");
}

TEST(LdsoCache, ReadsTheHostsCache) {
  auto entries = parse_ldso_cache(test::read_file("/etc/ld.so.cache"));
  EXPECT_FALSE(find(entries, "libc.so.6").empty());
}

TEST(LdsoCache, EveryTruncationIsAFormatErrorOrAShorterTable) {
  std::string cache = test::read_file(test::fake_cache());
  std::size_t full = parse_ldso_cache(cache).size();
  for (std::size_t length = 0; length < cache.size(); length += length < 256 ? 1 : 997) {
    try {
      EXPECT_LE(parse_ldso_cache(std::string_view(cache).substr(0, length)).size(), full);
    } catch (const FormatError&) {
    }
  }
  EXPECT_THROW(parse_ldso_cache(std::string_view(cache).substr(0, 100)), FormatError);
  EXPECT_THROW(parse_ldso_cache("not a cache at all"), FormatError);
}

TEST(LdsoCache, OutOfRangeCountsAndOffsetsAreRejected) {
  std::string cache = test::read_file(test::fake_cache());
  std::string huge_count = cache;
  huge_count[20] = huge_count[21] = huge_count[22] = huge_count[23] = '\xff';
  EXPECT_THROW(parse_ldso_cache(huge_count), FormatError);
  std::string bad_offset = cache;
  for (int i = 0; i < 4; ++i) bad_offset[48 + 4 + i] = '\xff';  // first entry's name
  bad_offset[48] = 0x03;
  bad_offset[49] = 0x03;  // make sure it is an x86-64 entry, so it is read
  EXPECT_THROW(parse_ldso_cache(bad_offset), FormatError);
}

}  // namespace
}  // namespace capsa::runtime::gpu
