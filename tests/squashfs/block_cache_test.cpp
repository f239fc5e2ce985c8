// The FUSE server's decompressed blocks: buffers come back for reuse, a data block leaves
// the cache once all of it has been sent, and the byte budget pushes out the least
// recently used.
#include "squashfs/block_cache.hpp"

#include <gtest/gtest.h>

namespace capsa::squashfs {
namespace {

Block block_of(const std::shared_ptr<BufferPool>& pool, std::size_t size) {
  std::shared_ptr<BlockBytes> bytes = pool->take();
  bytes->set_size(size);
  return bytes;
}

TEST(BufferPool, ABufferComesBackWhenItsLastBlockIsGone) {
  auto pool = BufferPool::create(4096, 2);
  Block first = block_of(pool, 4096);
  const std::uint8_t* buffer = first->data();
  Block held = first;
  first.reset();
  EXPECT_EQ(pool->idle(), 0U) << "a reply still holds it";
  held.reset();
  EXPECT_EQ(pool->idle(), 1U);
  Block again = block_of(pool, 100);
  EXPECT_EQ(again->data(), buffer);
  EXPECT_EQ(again->size(), 100U);
  EXPECT_EQ(again->capacity(), 4096U);
  EXPECT_EQ(pool->idle(), 0U);
}

TEST(BufferPool, KeepsNoMoreThanItsCount) {
  auto pool = BufferPool::create(4096, 2);
  {
    Block a = block_of(pool, 1), b = block_of(pool, 1), c = block_of(pool, 1);
  }
  EXPECT_EQ(pool->idle(), 2U);
}

TEST(BufferPool, ABlockNeverGrowsPastItsBuffer) {
  auto pool = BufferPool::create(64, 1);
  std::shared_ptr<BlockBytes> bytes = pool->take();
  bytes->set_size(1000);
  EXPECT_EQ(bytes->size(), 64U);
}

TEST(BlockCache, ADataBlockLeavesOnceEveryByteHasBeenSent) {
  auto pool = BufferPool::create(4096, 4);
  BlockCache cache;
  cache.set_budget(1 << 20);
  cache.insert(100, block_of(pool, 4096));
  cache.sent(100, 1000);
  EXPECT_NE(cache.find(100), nullptr) << "3096 bytes are still to be sent";
  cache.sent(100, 3096);
  EXPECT_EQ(cache.find(100), nullptr);
  EXPECT_EQ(pool->idle(), 1U) << "its buffer is free again";
  cache.sent(100, 10);  // a late report for a block that has gone changes nothing
  EXPECT_EQ(cache.size(), 0U);
}

TEST(BlockCache, ABlockNobodyReportsOnStaysUntilTheBudgetPushesItOut) {
  auto pool = BufferPool::create(4096, 4);
  BlockCache cache;
  cache.set_budget(2 * 4096);
  cache.insert(1, block_of(pool, 4096));  // fragment blocks: never reported as sent
  cache.insert(2, block_of(pool, 4096));
  EXPECT_NE(cache.find(1), nullptr);  // 1 is now the most recently used
  cache.insert(3, block_of(pool, 4096));
  EXPECT_NE(cache.find(1), nullptr);
  EXPECT_EQ(cache.find(2), nullptr);
  EXPECT_NE(cache.find(3), nullptr);
  EXPECT_EQ(cache.size(), 2U);
}

TEST(BlockCache, TheFirstOfTwoInsertsOfOneBlockWins) {
  auto pool = BufferPool::create(4096, 4);
  BlockCache cache;
  cache.set_budget(1 << 20);
  Block first = block_of(pool, 10);
  cache.insert(7, first);
  cache.insert(7, block_of(pool, 20));
  EXPECT_EQ(cache.find(7), first);
}

}  // namespace
}  // namespace capsa::squashfs
