// bench/read.sh's breakdown of FUSE requests: the counters CAPSA_FUSE_STATS names.
#include "squashfs/request_stats.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

namespace capsa::squashfs {
namespace {

std::vector<std::uint64_t> counters_in(const std::string& text) {
  std::vector<std::uint64_t> values(text.size() / sizeof(std::uint64_t));
  std::memcpy(values.data(), text.data(), values.size() * sizeof(std::uint64_t));
  return values;
}

TEST(RequestStats, OffWithoutTheVariable) {
  ::unsetenv("CAPSA_FUSE_STATS");
  EXPECT_EQ(RequestStats::from_environment(), nullptr);
  TimedRequest nothing(nullptr, RequestKind::read);  // and timing nothing is harmless
}

TEST(RequestStats, CountsEachKindAndItsTimeInTheFile) {
  test::TempDir dir;
  const std::string path = dir.path() + "/counters";
  ::setenv("CAPSA_FUSE_STATS", path.c_str(), 1);
  RequestStats* stats = RequestStats::from_environment();
  ::unsetenv("CAPSA_FUSE_STATS");
  ASSERT_NE(stats, nullptr);
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([stats] {
      for (int i = 0; i < 1000; ++i) stats->add(RequestKind::read, 2);
    });
  for (auto& thread : threads) thread.join();
  { TimedRequest timed(stats, RequestKind::lookup); }
  const std::vector<std::uint64_t> values = counters_in(test::read_file(path));
  ASSERT_EQ(values.size(), 2 * static_cast<std::size_t>(RequestKind::count));
  const auto read = 2 * static_cast<std::size_t>(RequestKind::read);
  EXPECT_EQ(values[read], 4000u);
  EXPECT_EQ(values[read + 1], 8000u);
  const auto lookup = 2 * static_cast<std::size_t>(RequestKind::lookup);
  EXPECT_EQ(values[lookup], 1u);
  EXPECT_EQ(values[2 * static_cast<std::size_t>(RequestKind::statfs)], 0u);
}

}  // namespace
}  // namespace capsa::squashfs
