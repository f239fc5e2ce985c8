#define FUSE_USE_VERSION 312
#include "squashfs/fuse_server.hpp"

#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <signal.h>
#include <sqfs/block.h>
#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/meta_reader.h>
#include <sqfs/super.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "squashfs/block_cache.hpp"
#include "squashfs/directory_entries.hpp"
#include "squashfs/image.hpp"
#include "squashfs/request_stats.hpp"
#include "squashfs/request_threads.hpp"
#include "squashfs/sqfs_handles.hpp"
#include "squashfs/window_file.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::squashfs {
namespace {


// The image never changes while mounted: the kernel may keep names and attributes as
// long as it likes (the kernel's own squashfs driver never revalidates either).
constexpr double kCacheTimeout = 365.0 * 24 * 3600;
// Decompressed blocks kept for all threads. File data also lands in the page cache
// (keep_cache), so this only has to hold the blocks being read right now and the
// fragment blocks that many small files share: 64 blocks (8 MiB of the default 128 KiB
// blocks, 64 MiB at most). Every unprivileged container has its own server, and a node
// may run one per core: the cache is per container, so it stays small.
constexpr std::size_t kCachedBlocks = 64;
// Block buffers kept for reuse (block_cache.hpp): enough for the blocks of the requests
// in flight at once.
constexpr std::size_t kIdleBlockBuffers = 16;
// Decoded inodes and directory listings kept; beyond these the tables start over
// (cheap to rebuild, and a bound is what matters for an image with millions of files).
constexpr std::size_t kMaxCachedInodes = 1u << 18;
constexpr std::size_t kMaxCachedDirectoryEntries = 1u << 21;
// Requests served at once: enough for the threads of a node's ranks reading in parallel.
constexpr unsigned kMaxThreads = 16;
constexpr std::uint32_t kBlockSizeMask = (1u << 24) - 1;
constexpr fuse_ino_t kInodeRefBias = 2;  // FUSE ino = inode reference + 2; 1 is the root

// Thrown inside a request and answered with the errno; never leaves a handler.
struct RequestError {
  int err;
};
void check(int code) {
  if (code < 0) throw RequestError{code == SQFS_ERROR_ALLOC ? ENOMEM : EIO};
}

bool is_dir(const sqfs_inode_generic_t& i) { return i.base.type == SQFS_INODE_DIR || i.base.type == SQFS_INODE_EXT_DIR; }
bool is_file(const sqfs_inode_generic_t& i) { return i.base.type == SQFS_INODE_FILE || i.base.type == SQFS_INODE_EXT_FILE; }
bool is_symlink(const sqfs_inode_generic_t& i) {
  return i.base.type == SQFS_INODE_SLINK || i.base.type == SQFS_INODE_EXT_SLINK;
}

mode_t type_bits(const sqfs_inode_generic_t& i) {
  switch (i.base.type) {
    case SQFS_INODE_DIR: case SQFS_INODE_EXT_DIR: return S_IFDIR;
    case SQFS_INODE_FILE: case SQFS_INODE_EXT_FILE: return S_IFREG;
    case SQFS_INODE_SLINK: case SQFS_INODE_EXT_SLINK: return S_IFLNK;
    case SQFS_INODE_BDEV: case SQFS_INODE_EXT_BDEV: return S_IFBLK;
    case SQFS_INODE_CDEV: case SQFS_INODE_EXT_CDEV: return S_IFCHR;
    case SQFS_INODE_FIFO: case SQFS_INODE_EXT_FIFO: return S_IFIFO;
    default: return S_IFSOCK;
  }
}

std::uint32_t link_count(const sqfs_inode_generic_t& i) {
  switch (i.base.type) {
    case SQFS_INODE_DIR: return i.data.dir.nlink;
    case SQFS_INODE_EXT_DIR: return i.data.dir_ext.nlink;
    case SQFS_INODE_EXT_FILE: return i.data.file_ext.nlink;
    case SQFS_INODE_SLINK: return i.data.slink.nlink;
    case SQFS_INODE_EXT_SLINK: return i.data.slink_ext.nlink;
    case SQFS_INODE_BDEV: case SQFS_INODE_CDEV: return i.data.dev.nlink;
    case SQFS_INODE_EXT_BDEV: case SQFS_INODE_EXT_CDEV: return i.data.dev_ext.nlink;
    case SQFS_INODE_FIFO: case SQFS_INODE_SOCKET: return i.data.ipc.nlink;
    case SQFS_INODE_EXT_FIFO: case SQFS_INODE_EXT_SOCKET: return i.data.ipc_ext.nlink;
    default: return 1;  // a basic file inode has no link count: it has exactly one
  }
}

// squashfs stores device numbers as Linux's new_encode_dev does.
dev_t decode_device(std::uint32_t devno) {
  return makedev((devno & 0xfff00) >> 8, (devno & 0xff) | ((devno >> 12) & 0xfff00));
}

// An inode decoded once and shared by every request that needs it.
struct Node {
  InodePtr inode;
  struct stat attr {};
  // Regular files: where each full block starts on disk (relative to the image), and
  // whether the tail lives in a fragment.
  std::vector<std::uint64_t> block_offsets;
  std::uint64_t size = 0;
  bool has_fragment = false;
};
using NodeRef = std::shared_ptr<const Node>;

struct Entry {
  std::string name;
  std::uint64_t ref;
  std::uint32_t inode_number;
  mode_t type;
};
using Listing = std::vector<Entry>;  // sorted by name, as squashfs stores directories
using ListingRef = std::shared_ptr<const Listing>;
// Part of a read: bytes inside a decompressed block, which the reference keeps alive
// until the reply has been written (replies go out straight from the cache, no copy).
struct Piece {
  Block block;
  const std::uint8_t* data;
  std::size_t length;
};

// A bounded map from inode reference to something decoded from it, read by many
// threads at once; cleared when full.
template <typename Value>
class RefTable {
 public:
  explicit RefTable(std::size_t limit) : limit_(limit) {}
  Value find(std::uint64_t ref) const {
    std::shared_lock lock(mutex_);
    auto it = map_.find(ref);
    return it == map_.end() ? nullptr : it->second;
  }
  void insert(std::uint64_t ref, const Value& value, std::size_t weight) {
    std::unique_lock lock(mutex_);
    if (weight_ + weight > limit_) {
      map_.clear();
      weight_ = 0;
    }
    if (map_.emplace(ref, value).second) weight_ += weight;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::uint64_t, Value> map_;
  std::size_t limit_;
  std::size_t weight_ = 0;
};

}  // namespace

struct FuseImage::Impl {
  std::shared_ptr<const Image> image;
  const sqfs_super_t& super;
  std::unique_ptr<sqfs_id_table_t, DestroyObject> ids;
  std::unique_ptr<sqfs_frag_table_t, DestroyObject> fragments;
  std::uint64_t root_ref = 0;

  explicit Impl(std::shared_ptr<const Image> opened) : image(std::move(opened)), super(image->super()) {}

  // The kernel opens files and directories without asking (FUSE_CAP_NO_OPEN_SUPPORT and
  // _NO_OPENDIR_SUPPORT): an image never changes, so there is nothing to check, and each
  // file read in a container start saves the OPEN and RELEASE round trips.
  bool opens_without_asking = false;
  bool opendirs_without_asking = false;

  RefTable<NodeRef> nodes{kMaxCachedInodes};
  RefTable<ListingRef> listings{kMaxCachedDirectoryEntries};
  BlockCache blocks;
  std::shared_ptr<BufferPool> buffers;                     // the blocks' buffers, for reuse
  RequestStats* stats = RequestStats::from_environment();  // bench/read.sh's breakdown; nullptr: off

  // The parts of libsquashfs that keep state between calls (a decompressor's stream, a
  // meta data reader's current block) cannot be shared between threads: each request
  // borrows a set of its own from this pool.
  struct Readers {
    CompressorPtr decompressor;
    MetaReaderPtr inodes;
    MetaReaderPtr directories;
    std::vector<std::uint8_t> scratch;
  };
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<Readers>> pool;

  class Lease {
   public:
    Lease(Impl& impl) : impl_(impl), readers_(impl.take_readers()) {}
    ~Lease() {
      std::lock_guard lock(impl_.pool_mutex);
      impl_.pool.push_back(std::move(readers_));
    }
    Readers* operator->() { return readers_.get(); }

   private:
    Impl& impl_;
    std::unique_ptr<Readers> readers_;
  };

  std::unique_ptr<Readers> take_readers() {
    {
      std::lock_guard lock(pool_mutex);
      if (!pool.empty()) {
        auto readers = std::move(pool.back());
        pool.pop_back();
        return readers;
      }
    }
    auto readers = std::make_unique<Readers>();
    readers->decompressor = image->make_decompressor();
    readers->inodes = image->inode_table(readers->decompressor.get());
    readers->directories = image->directory_table(readers->decompressor.get());
    return readers;
  }

  void open();
  NodeRef node(std::uint64_t ref);
  NodeRef node_of(fuse_ino_t ino) { return node(ref_of(ino)); }
  fuse_ino_t ino_of(std::uint64_t ref) const { return ref == root_ref ? FUSE_ROOT_ID : ref + kInodeRefBias; }
  std::uint64_t ref_of(fuse_ino_t ino) const { return ino == FUSE_ROOT_ID ? root_ref : ino - kInodeRefBias; }
  ListingRef listing(std::uint64_t ref, const Node& dir);
  Block block(std::uint64_t position, std::uint32_t size_word, std::size_t expected);
  std::vector<Piece> read(const Node& file, std::uint64_t offset, std::size_t size);
  fuse_entry_param entry_of(std::uint64_t ref);
};

// In messages of the errors a request turns into an errno: nobody reads them.
const std::string kInRequest = "(request)";

void FuseImage::Impl::open() {
  const std::string& label = image->label();
  CompressorPtr decompressor = image->make_decompressor();
  ids.reset(sqfs_id_table_create(0));
  fragments.reset(sqfs_frag_table_create(0));
  if (!ids || !fragments) throw std::bad_alloc();
  image->check(sqfs_id_table_read(ids.get(), image->file(), &super, decompressor.get()), "squashfs id table");
  if (!(super.flags & SQFS_FLAG_NO_FRAGMENTS) && super.fragment_entry_count != 0)
    image->check(sqfs_frag_table_read(fragments.get(), image->file(), &super, decompressor.get()),
                 "squashfs fragment table");
  blocks.set_budget(kCachedBlocks * super.block_size);
  buffers = BufferPool::create(super.block_size, kIdleBlockBuffers);
  root_ref = super.root_inode_ref;
  NodeRef root;
  try {
    root = node(root_ref);
  } catch (const RequestError&) {
    throw FormatError(label + ": corrupt squashfs root inode");
  } catch (const FormatError&) {
    throw FormatError(label + ": corrupt squashfs root inode");
  }
  if (!is_dir(*root->inode)) throw FormatError(label + ": squashfs root inode is not a directory");
}

NodeRef FuseImage::Impl::node(std::uint64_t ref) {
  if (NodeRef found = nodes.find(ref)) return found;
  auto made = std::make_shared<Node>();
  {
    Lease readers(*this);
    made->inode = image->read_inode(readers->inodes.get(), ref, kInRequest);
  }
  const sqfs_inode_generic_t& inode = *made->inode;
  const sqfs_inode_generic_t* raw = made->inode.get();
  struct stat& st = made->attr;
  st.st_ino = inode.base.inode_number;
  st.st_mode = type_bits(inode) | (inode.base.mode & 07777);
  st.st_nlink = link_count(inode);
  sqfs_u32 uid = 0, gid = 0;
  check(sqfs_id_table_index_to_id(ids.get(), inode.base.uid_idx, &uid));
  check(sqfs_id_table_index_to_id(ids.get(), inode.base.gid_idx, &gid));
  st.st_uid = uid;
  st.st_gid = gid;
  st.st_mtim.tv_sec = st.st_atim.tv_sec = st.st_ctim.tv_sec = inode.base.mod_time;
  st.st_blksize = static_cast<blksize_t>(super.block_size);
  switch (inode.base.type) {
    case SQFS_INODE_DIR: st.st_size = inode.data.dir.size; break;
    case SQFS_INODE_EXT_DIR: st.st_size = inode.data.dir_ext.size; break;
    case SQFS_INODE_SLINK: case SQFS_INODE_EXT_SLINK: st.st_size = inode.data.slink.target_size; break;
    case SQFS_INODE_BDEV: case SQFS_INODE_CDEV: st.st_rdev = decode_device(inode.data.dev.devno); break;
    case SQFS_INODE_EXT_BDEV: case SQFS_INODE_EXT_CDEV: st.st_rdev = decode_device(inode.data.dev_ext.devno); break;
    default: break;
  }
  if (is_file(inode)) {
    sqfs_u64 size = 0, start = 0;
    sqfs_u32 fragment_index = 0, fragment_offset = 0;
    check(sqfs_inode_get_file_size(raw, &size));
    check(sqfs_inode_get_file_block_start(raw, &start));
    check(sqfs_inode_get_frag_location(raw, &fragment_index, &fragment_offset));
    made->size = size;
    made->has_fragment = fragment_index != 0xffffffff;
    std::size_t count = sqfs_inode_get_file_block_count(raw);
    std::uint64_t full_blocks = size / super.block_size;
    std::uint64_t expected = made->has_fragment ? full_blocks : (size + super.block_size - 1) / super.block_size;
    if (count != expected) throw RequestError{EIO};
    made->block_offsets.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      made->block_offsets.push_back(start);
      start += inode.extra[i] & kBlockSizeMask;
    }
    st.st_size = static_cast<off_t>(size);
  }
  st.st_blocks = (st.st_size + 511) / 512;
  made->block_offsets.shrink_to_fit();
  nodes.insert(ref, made, 1);
  return made;
}

ListingRef FuseImage::Impl::listing(std::uint64_t ref, const Node& dir) {
  if (ListingRef found = listings.find(ref)) return found;
  auto made = std::make_shared<Listing>();
  {
    Lease readers(*this);
    DirectoryEntries entries(*image, readers->directories.get(), *dir.inode, kInRequest);
    for (DirectoryEntry entry; entries.next(entry);) {
      mode_t type = S_IFSOCK;
      switch (entry.type) {
        case SQFS_INODE_DIR: type = S_IFDIR; break;
        case SQFS_INODE_FILE: type = S_IFREG; break;
        case SQFS_INODE_SLINK: type = S_IFLNK; break;
        case SQFS_INODE_BDEV: type = S_IFBLK; break;
        case SQFS_INODE_CDEV: type = S_IFCHR; break;
        case SQFS_INODE_FIFO: type = S_IFIFO; break;
        default: break;
      }
      made->push_back({std::move(entry.name), entry.ref, entry.inode_number, type});
    }
  }
  // Written sorted; sorted again here because lookups rely on it.
  if (!std::is_sorted(made->begin(), made->end(), [](const Entry& a, const Entry& b) { return a.name < b.name; }))
    std::sort(made->begin(), made->end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  listings.insert(ref, made, made->size() + 1);
  return made;
}

// The decompressed block stored at `position` with on-disk size word `size_word`;
// `expected` is the number of bytes it must decompress to.
Block FuseImage::Impl::block(std::uint64_t position, std::uint32_t size_word, std::size_t expected) {
  std::uint32_t stored = size_word & kBlockSizeMask;
  if (expected > super.block_size) throw RequestError{EIO};
  if (stored == 0) {  // a sparse block
    std::shared_ptr<BlockBytes> zeros = buffers->take();
    std::memset(zeros->data(), 0, expected);
    zeros->set_size(expected);
    return zeros;
  }
  if (Block found = blocks.find(position)) return found;
  if (stored > super.block_size) throw RequestError{EIO};
  std::shared_ptr<BlockBytes> data = buffers->take();
  if (!SQFS_IS_BLOCK_COMPRESSED(size_word)) {
    TimedRequest timed(stats, RequestKind::block_read);
    check(read_window(image->file(), position, data->data(), stored));
    data->set_size(stored);
  } else {
    Lease readers(*this);
    readers->scratch.resize(stored);
    {
      TimedRequest timed(stats, RequestKind::block_read);
      check(read_window(image->file(), position, readers->scratch.data(), stored));
    }
    TimedRequest timed(stats, RequestKind::block_decompress);
    sqfs_s32 n = readers->decompressor->do_block(readers->decompressor.get(), readers->scratch.data(), stored,
                                                 data->data(), super.block_size);
    check(n);
    data->set_size(static_cast<std::size_t>(n));
  }
  if (data->size() < expected) throw RequestError{EIO};
  Block result = std::move(data);
  blocks.insert(position, result);
  return result;
}

std::vector<Piece> FuseImage::Impl::read(const Node& f, std::uint64_t offset, std::size_t size) {
  std::vector<Piece> pieces;
  if (offset >= f.size) return pieces;
  size = static_cast<std::size_t>(std::min<std::uint64_t>(size, f.size - offset));
  const std::uint64_t block_size = super.block_size;
  std::size_t done = 0;
  while (done < size) {
    std::uint64_t position = offset + done;
    std::uint64_t index = position / block_size;
    std::size_t within = static_cast<std::size_t>(position % block_size);
    std::size_t length = static_cast<std::size_t>(std::min<std::uint64_t>(block_size, f.size - index * block_size));
    Block data;
    std::size_t base = 0;  // where this file's bytes start in `data`
    // The position of a stored data block (not a fragment, not a sparse block, which has
    // its successor's position), to report what was sent; 0 for the others.
    std::uint64_t data_block = 0;
    if (index < f.block_offsets.size()) {
      if ((f.inode->extra[index] & kBlockSizeMask) != 0) data_block = f.block_offsets[index];
      data = block(f.block_offsets[index], f.inode->extra[index], length);
    } else {
      if (!f.has_fragment) throw RequestError{EIO};
      sqfs_u32 fragment_index = 0, fragment_offset = 0;
      check(sqfs_inode_get_frag_location(f.inode.get(), &fragment_index, &fragment_offset));
      sqfs_fragment_t fragment{};
      check(sqfs_frag_table_lookup(fragments.get(), fragment_index, &fragment));
      data = block(fragment.start_offset, fragment.size, 0);
      base = fragment_offset;
      if (base > data->size() || length > data->size() - base) throw RequestError{EIO};
    }
    std::size_t n = std::min(size - done, length - within);
    const std::uint8_t* start = data->data() + base + within;
    pieces.push_back({std::move(data), start, n});
    if (data_block != 0) blocks.sent(data_block, n);
    done += n;
  }
  return pieces;
}

fuse_entry_param FuseImage::Impl::entry_of(std::uint64_t ref) {
  NodeRef child = node(ref);
  fuse_entry_param e{};
  e.ino = ino_of(ref);
  e.attr = child->attr;
  e.attr_timeout = kCacheTimeout;
  e.entry_timeout = kCacheTimeout;
  return e;
}

namespace {

FuseImage::Impl& image_of(fuse_req_t req) { return *static_cast<FuseImage::Impl*>(fuse_req_userdata(req)); }

// Runs a request handler, turning a failure into an error reply.
template <typename Body>
void answer(fuse_req_t req, RequestKind kind, Body&& body) {
  FuseImage::Impl& image = image_of(req);
  TimedRequest timed(image.stats, kind);
  try {
    body(image);
  } catch (const RequestError& e) {
    fuse_reply_err(req, e.err);
  } catch (const ImageError& e) {
    fuse_reply_err(req, e.code() == SQFS_ERROR_ALLOC ? ENOMEM : EIO);
  } catch (const std::bad_alloc&) {
    fuse_reply_err(req, ENOMEM);
  } catch (const std::exception&) {
    fuse_reply_err(req, EIO);
  }
}

void op_init(void* userdata, fuse_conn_info* conn) {
  // Symlink targets never change: let the kernel keep them.
  if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
  auto* image = static_cast<FuseImage::Impl*>(userdata);
  image->opens_without_asking = (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) != 0;
  image->opendirs_without_asking = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
  // Every read of a file not in the page cache goes through readahead, which the kernel
  // sends as background requests, 12 at a time by default: with more readers than that
  // (ranks of a job, a workflow's parallel tasks, bench/read.sh's 16 threads) the rest
  // wait in the kernel while server threads and the disk idle, most of all when the
  // SIF is not cached. As many as the server has threads, and then some queued.
  conn->max_background = 4 * kMaxThreads;
  conn->congestion_threshold = 3 * kMaxThreads;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  answer(req, RequestKind::lookup, [&](FuseImage::Impl& image) {
    NodeRef dir = image.node_of(parent);
    if (!is_dir(*dir->inode)) throw RequestError{ENOTDIR};
    std::uint64_t dir_ref = image.ref_of(parent);
    ListingRef entries = image.listing(dir_ref, *dir);
    std::string_view wanted(name);
    auto it = std::lower_bound(entries->begin(), entries->end(), wanted,
                               [](const Entry& e, std::string_view n) { return e.name < n; });
    if (it == entries->end() || it->name != wanted) {
      // A negative entry the kernel may keep as long as a positive one.
      fuse_entry_param none{};
      none.entry_timeout = kCacheTimeout;
      fuse_reply_entry(req, &none);
      return;
    }
    fuse_entry_param e = image.entry_of(it->ref);
    fuse_reply_entry(req, &e);
  });
}

void op_forget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }  // inos are stateless
void op_forget_multi(fuse_req_t req, size_t, fuse_forget_data*) { fuse_reply_none(req); }

void op_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  answer(req, RequestKind::getattr, [&](FuseImage::Impl& image) {
    NodeRef n = image.node_of(ino);
    fuse_reply_attr(req, &n->attr, kCacheTimeout);
  });
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  answer(req, RequestKind::readlink, [&](FuseImage::Impl& image) {
    NodeRef n = image.node_of(ino);
    if (!is_symlink(*n->inode)) throw RequestError{EINVAL};
    std::string target(reinterpret_cast<const char*>(n->inode->extra), n->inode->payload_bytes_used);
    fuse_reply_readlink(req, target.c_str());
  });
}

// The listing of directory `ino`: held by the open directory, or looked up when the
// kernel opened it without asking (fh 0).
ListingRef listing_of(FuseImage::Impl& image, fuse_ino_t ino, const fuse_file_info* fi) {
  if (fi != nullptr && fi->fh != 0) return *reinterpret_cast<ListingRef*>(fi->fh);
  NodeRef dir = image.node_of(ino);
  if (!is_dir(*dir->inode)) throw RequestError{ENOTDIR};
  return image.listing(image.ref_of(ino), *dir);
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  answer(req, RequestKind::opendir, [&](FuseImage::Impl& image) {
    if (image.opendirs_without_asking) throw RequestError{ENOSYS};  // a success: see opendirs_without_asking
    auto held = std::make_unique<ListingRef>(listing_of(image, ino, nullptr));
    fi->fh = reinterpret_cast<std::uint64_t>(held.get());
    fi->cache_readdir = 1;
    fi->keep_cache = 1;
    if (fuse_reply_open(req, fi) == 0) held.release();
  });
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete reinterpret_cast<ListingRef*>(fi->fh);
  fuse_reply_err(req, 0);
}

// Offsets: 0 is the start, 1 follows ".", 2 follows "..", 3+i follows entry i.
void read_directory(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi, bool plus) {
  answer(req, RequestKind::readdir, [&](FuseImage::Impl& image) {
    ListingRef held = listing_of(image, ino, fi);
    const Listing& entries = *held;
    std::vector<char> buffer(size);
    std::size_t used = 0;
    for (auto next = static_cast<std::size_t>(std::max<off_t>(offset, 0)); next < entries.size() + 2; ++next) {
      const char* name;
      fuse_entry_param e{};
      if (next < 2) {
        name = next == 0 ? "." : "..";
        e.attr.st_mode = S_IFDIR;
        e.attr.st_ino = next == 0 ? image.node_of(ino)->attr.st_ino : 0;
      } else {
        const Entry& entry = entries[next - 2];
        name = entry.name.c_str();
        if (plus) {
          e = image.entry_of(entry.ref);
        } else {
          e.attr.st_ino = entry.inode_number;
          e.attr.st_mode = entry.type;
        }
      }
      std::size_t left = size - used;
      auto next_offset = static_cast<off_t>(next + 1);
      std::size_t need = plus ? fuse_add_direntry_plus(req, buffer.data() + used, left, name, &e, next_offset)
                              : fuse_add_direntry(req, buffer.data() + used, left, name, &e.attr, next_offset);
      if (need > left) break;
      used += need;
    }
    fuse_reply_buf(req, buffer.data(), used);
  });
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi) {
  read_directory(req, ino, size, offset, fi, false);
}
void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info* fi) {
  read_directory(req, ino, size, offset, fi, true);
}

void op_open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  answer(req, RequestKind::open, [&](FuseImage::Impl& image) {
    // A success that keeps the page cache (the kernel's default for such opens). The
    // mount is read-only, so the kernel refuses opens for writing itself.
    if (image.opens_without_asking) throw RequestError{ENOSYS};
    NodeRef n = image.node_of(ino);
    if (is_dir(*n->inode)) throw RequestError{EISDIR};
    if ((fi->flags & O_ACCMODE) != O_RDONLY) throw RequestError{EROFS};
    fi->keep_cache = 1;  // the contents never change: keep the page cache across opens
    fuse_reply_open(req, fi);
  });
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, fuse_file_info*) {
  answer(req, RequestKind::read, [&](FuseImage::Impl& image) {
    NodeRef n = image.node_of(ino);
    if (!is_file(*n->inode)) throw RequestError{EINVAL};
    std::vector<Piece> pieces = image.read(*n, static_cast<std::uint64_t>(std::max<off_t>(offset, 0)), size);
    std::vector<iovec> parts;
    parts.reserve(pieces.size());
    for (const Piece& p : pieces) parts.push_back({const_cast<std::uint8_t*>(p.data), p.length});
    fuse_reply_iov(req, parts.data(), static_cast<int>(parts.size()));
  });
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
  answer(req, RequestKind::statfs, [&](FuseImage::Impl& image) {
    struct statvfs st {};
    st.f_bsize = st.f_frsize = image.super.block_size;
    st.f_blocks = (image.super.bytes_used + image.super.block_size - 1) / image.super.block_size;
    st.f_files = image.super.inode_count;
    st.f_namemax = 256;
    fuse_reply_statfs(req, &st);
  });
}

// No extended attributes are served (capsa's images carry none).
void op_getxattr(fuse_req_t req, fuse_ino_t, const char*, size_t) { fuse_reply_err(req, ENODATA); }
void op_listxattr(fuse_req_t req, fuse_ino_t, size_t size) {
  if (size == 0) fuse_reply_xattr(req, 0);
  else fuse_reply_buf(req, nullptr, 0);
}

}  // namespace

FuseImage::FuseImage(const std::string& path, std::uint64_t offset, std::uint64_t size)
    : FuseImage(std::make_shared<const Image>(open_file(path, O_RDONLY), offset, size, path)) {}

FuseImage::FuseImage(std::shared_ptr<const Image> image) : impl_(std::make_unique<Impl>(std::move(image))) {
  impl_->open();
}

FuseImage::~FuseImage() = default;

fuse_session* FuseImage::new_session() {
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.getattr = op_getattr;
  ops.readlink = op_readlink;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.readdirplus = op_readdirplus;
  ops.releasedir = op_releasedir;
  ops.open = op_open;
  ops.read = op_read;
  ops.statfs = op_statfs;
  ops.getxattr = op_getxattr;
  ops.listxattr = op_listxattr;

  char program[] = "capsa";
  char* argv[] = {program, nullptr};
  fuse_args args = FUSE_ARGS_INIT(1, argv);
  fuse_session* session = fuse_session_new(&args, &ops, sizeof(ops), impl_.get());
  fuse_opt_free_args(&args);  // parsing copies the arguments (found by fuzz_fuse_server: a leak)
  return session;
}

int FuseImage::serve(int fuse_fd, const EndWatch& container, int end_lock) {
  // The container's process group gets the terminal's and the batch system's signals;
  // the container decides what to do with them and still needs its files meanwhile.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
    ::signal(sig, SIG_IGN);
  fuse_session* session = new_session();
  if (session == nullptr) return 1;
  // libfuse takes a mounted connection as "/dev/fd/N" and skips mounting.
  std::string mountpoint = "/dev/fd/" + std::to_string(fuse_fd);
  if (fuse_session_mount(session, mountpoint.c_str()) != 0) {
    fuse_session_destroy(session);
    return 1;
  }
  // The kernel's INIT first, before any other thread exists: a container's first access
  // waits for it.
  fuse_buf init{};
  if (fuse_session_receive_buf(session, &init) > 0) fuse_session_process_buf(session, &init);
  std::free(init.mem);
  answer_requests(session, kMaxThreads, container, end_lock);
  // No fuse_session_unmount: the connection was not mounted by libfuse, and when the
  // threads end the kernel has already dropped it.
  fuse_session_destroy(session);
  return 0;
}

}  // namespace capsa::squashfs
