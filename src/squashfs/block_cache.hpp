#pragma once
// Decompressed squashfs blocks for the FUSE server (fuse_server.cpp): the buffers they
// live in, and a cache of the ones in use. Fresh memory is dear where capsa runs: on the
// 2-CPU VMs it is measured on, faulting in a new 128 KiB buffer costs about 60 us against
// 3 us for reusing one, and every unprivileged container start decompresses the blocks of
// its first program anew. So a block's buffer goes back to a pool when the block is done
// with, and a data block is done with as soon as every byte of it has been sent: the
// kernel's page cache holds the file from then on (keep_cache). Fragment blocks, which
// many small files share, stay until the byte budget pushes them out.
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace capsa::squashfs {

class BufferPool;

// The bytes of one decompressed block, in a buffer of the pool's size that returns to the
// pool when the last reference goes.
class BlockBytes {
 public:
  BlockBytes(std::unique_ptr<std::uint8_t[]> buffer, std::size_t capacity, std::shared_ptr<BufferPool> home);
  ~BlockBytes();
  BlockBytes(const BlockBytes&) = delete;
  BlockBytes& operator=(const BlockBytes&) = delete;

  std::uint8_t* data() { return buffer_.get(); }
  const std::uint8_t* data() const { return buffer_.get(); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  void set_size(std::size_t size);  // at most capacity()

 private:
  std::unique_ptr<std::uint8_t[]> buffer_;
  std::size_t capacity_;
  std::size_t size_;
  std::shared_ptr<BufferPool> home_;
};
using Block = std::shared_ptr<const BlockBytes>;

// Buffers of one size (the image's block size), kept for reuse up to a count.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static std::shared_ptr<BufferPool> create(std::size_t buffer_size, std::size_t kept);
  // A block of capacity buffer_size, its bytes not initialised, its size the capacity.
  std::shared_ptr<BlockBytes> take();
  std::size_t idle() const;  // buffers waiting for reuse

 private:
  friend class BlockBytes;
  BufferPool(std::size_t buffer_size, std::size_t kept) : buffer_size_(buffer_size), kept_(kept) {}
  void give_back(std::unique_ptr<std::uint8_t[]> buffer);

  const std::size_t buffer_size_;
  const std::size_t kept_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::uint8_t[]>> idle_;
};

// The blocks in use, keyed by their position in the image (unique for data and fragment
// blocks alike): least recently used go first once the byte budget is spent, and a data
// block goes once all of its bytes have been sent. Safe for concurrent use.
class BlockCache {
 public:
  void set_budget(std::size_t budget) { budget_ = budget; }
  Block find(std::uint64_t key);
  void insert(std::uint64_t key, const Block& block);
  // `bytes` of the block at `key` have gone to the kernel; a block whose every byte has
  // leaves the cache (it lives on until the replies that hold it are written).
  void sent(std::uint64_t key, std::size_t bytes);
  std::size_t size() const;

 private:
  struct Entry {
    std::uint64_t key;
    Block block;
    std::size_t sent = 0;
  };
  using Order = std::list<Entry>;
  void erase(Order::iterator entry);

  mutable std::mutex mutex_;
  std::size_t budget_ = 0;
  std::size_t used_ = 0;
  Order order_;  // most recently used first
  std::unordered_map<std::uint64_t, Order::iterator> index_;
};

}  // namespace capsa::squashfs
