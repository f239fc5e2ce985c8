#include "squashfs/block_cache.hpp"

#include <utility>

namespace capsa::squashfs {

BlockBytes::BlockBytes(std::unique_ptr<std::uint8_t[]> buffer, std::size_t capacity, std::shared_ptr<BufferPool> home)
    : buffer_(std::move(buffer)), capacity_(capacity), size_(capacity), home_(std::move(home)) {}

BlockBytes::~BlockBytes() {
  if (home_) home_->give_back(std::move(buffer_));
}

void BlockBytes::set_size(std::size_t size) { size_ = size < capacity_ ? size : capacity_; }

std::shared_ptr<BufferPool> BufferPool::create(std::size_t buffer_size, std::size_t kept) {
  return std::shared_ptr<BufferPool>(new BufferPool(buffer_size, kept));
}

std::shared_ptr<BlockBytes> BufferPool::take() {
  std::unique_ptr<std::uint8_t[]> buffer;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      buffer = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  // Not zeroed: a decompressor or a read fills it, and clearing 128 KiB is wasted work.
  if (!buffer) buffer = std::make_unique_for_overwrite<std::uint8_t[]>(buffer_size_);
  return std::make_shared<BlockBytes>(std::move(buffer), buffer_size_, shared_from_this());
}

std::size_t BufferPool::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

void BufferPool::give_back(std::unique_ptr<std::uint8_t[]> buffer) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < kept_) idle_.push_back(std::move(buffer));
}

Block BlockCache::find(std::uint64_t key) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->block;
}

void BlockCache::insert(std::uint64_t key, const Block& block) {
  std::lock_guard lock(mutex_);
  if (index_.count(key) != 0) return;  // another thread decoded it meanwhile
  order_.push_front(Entry{key, block});
  index_[key] = order_.begin();
  used_ += block->size();
  while (used_ > budget_ && order_.size() > 1) erase(std::prev(order_.end()));
}

void BlockCache::sent(std::uint64_t key, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  auto it = index_.find(key);
  if (it == index_.end()) return;  // pushed out already
  Entry& entry = *it->second;
  entry.sent += bytes;
  if (entry.sent >= entry.block->size()) erase(it->second);
}

std::size_t BlockCache::size() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

void BlockCache::erase(Order::iterator entry) {
  used_ -= entry->block->size();
  index_.erase(entry->key);
  order_.erase(entry);
}

}  // namespace capsa::squashfs
