#include "util/human_size.hpp"

#include <gtest/gtest.h>

namespace capsa {
namespace {

TEST(HumanSize, BytesBelowOneKibibyteArePrintedExactly) {
  EXPECT_EQ(human_size(0), "0 B");
  EXPECT_EQ(human_size(847), "847 B");
  EXPECT_EQ(human_size(1023), "1023 B");
}

TEST(HumanSize, LargerSizesRoundToTheNearestUnitLikeSiftool) {
  EXPECT_EQ(human_size(28080), "27 KiB");        // 27.42
  EXPECT_EQ(human_size(759525), "742 KiB");      // busybox data size
  EXPECT_EQ(human_size(1536), "2 KiB");          // 1.5 rounds away from zero
  EXPECT_EQ(human_size(1048575), "1024 KiB");    // still below the next unit's threshold
  EXPECT_EQ(human_size(1048576), "1 MiB");
  EXPECT_EQ(human_size(20LL << 30), "20 GiB");
}

}  // namespace
}  // namespace capsa
