#include "convert/squashfs_writer.hpp"

#include <sqfs/block.h>
#include <sqfs/block_processor.h>
#include <sqfs/block_writer.h>
#include <sqfs/compressor.h>
#include <sqfs/dir_writer.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_writer.h>
#include <sqfs/super.h>
#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <limits>
#include <new>
#include <thread>
#include <vector>

#include "config/site_config.hpp"
#include "convert/offset_file.hpp"
#include "util/error.hpp"

namespace capsa::convert {
namespace {

template <typename T>
using SqfsPtr = std::unique_ptr<T, SquashfsWriter::DestroyObject>;
struct FreeInode {
  void operator()(sqfs_inode_generic_t* inode) const { sqfs_free(inode); }
};
using InodePtr = std::unique_ptr<sqfs_inode_generic_t, FreeInode>;

constexpr sqfs_u32 kNoXattr = 0xFFFFFFFF;
constexpr std::size_t kDeviceBlockSize = 4096;  // images are padded to this, as mksquashfs does

SQFS_COMPRESSOR compressor_id(Compressor c) {
  switch (c) {
    case Compressor::Gzip: return SQFS_COMP_GZIP;
    case Compressor::Xz: return SQFS_COMP_XZ;
    case Compressor::Zstd: break;
  }
  return SQFS_COMP_ZSTD;
}

std::uint32_t type_bits(Kind kind) {
  switch (kind) {
    case Kind::Directory: return S_IFDIR;
    case Kind::Symlink: return S_IFLNK;
    case Kind::Fifo: return S_IFIFO;
    default: return S_IFREG;
  }
}

}  // namespace

// Declared in the order they depend on each other, so that they are destroyed in
// reverse: the block processor first, the file last.
struct SquashfsWriter::Libsquashfs {
  SqfsPtr<sqfs_file_t> file;
  SqfsPtr<sqfs_compressor_t> compressor;
  SqfsPtr<sqfs_compressor_t> decompressor;
  SqfsPtr<sqfs_id_table_t> ids;
  SqfsPtr<sqfs_frag_table_t> fragments;
  SqfsPtr<sqfs_block_writer_t> blocks;
  SqfsPtr<sqfs_block_processor_t> processor;
  sqfs_super_t super{};
  std::uint32_t block_size = 0;
};

void SquashfsWriter::check(int code, const char* what) const {
  if (code >= 0) return;
  if (code == SQFS_ERROR_IO) {
    int err = errno != 0 ? errno : EIO;
    throw SystemError(path_ + ": " + what, err);
  }
  if (code == SQFS_ERROR_ALLOC) throw std::bad_alloc();
  throw Error(path_ + ": " + what + ": libsquashfs error " + std::to_string(code));
}

namespace {

// The CPUs this process may run on: Slurm and taskset confine jobs with an affinity
// mask, and using every CPU of a shared login node is what gets conversions killed.
unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

unsigned compression_workers(unsigned requested) {
  unsigned workers = requested != 0 ? requested : usable_cpus();
  // The administrator's `mksquashfs procs` (0: no limit) caps it, as it caps mksquashfs.
  if (const unsigned long limit = config::active_site_config().mksquashfs_procs; limit != 0 && workers > limit)
    workers = static_cast<unsigned>(limit);
  return workers;
}

namespace {

int level_for(const ConvertOptions& options) {
  if (options.level) return *options.level;
  if (options.compressor == Compressor::Zstd) return kDefaultZstdLevel;
  if (options.compressor == Compressor::Gzip) return kDefaultGzipLevel;
  return -1;  // libsquashfs's default
}

}  // namespace

SqfsPtr<sqfs_compressor_t> SquashfsWriter::create_compressor(const ConvertOptions& options, bool uncompress) const {
  SQFS_COMPRESSOR id = compressor_id(options.compressor);
  sqfs_compressor_config_t config{};
  check(sqfs_compressor_config_init(&config, id, options.block_size, uncompress ? SQFS_COMP_FLAG_UNCOMPRESS : 0),
        "compressor settings");
  int level = level_for(options);
  if (level >= 0 && !uncompress) config.level = static_cast<sqfs_u32>(level);
  sqfs_compressor_t* compressor = nullptr;
  int ret = sqfs_compressor_create(&config, &compressor);
  if (ret == SQFS_ERROR_UNSUPPORTED || ret == SQFS_ERROR_ARG_INVALID)
    throw Error(std::string("compressor ") + sqfs_compressor_name_from_id(id) +
                (options.level ? " at level " + std::to_string(*options.level) : "") +
                " is not supported by this libsquashfs");
  check(ret, "creating the compressor");
  return SqfsPtr<sqfs_compressor_t>(compressor);
}

void SquashfsWriter::DestroyObject::operator()(void* object) const { sqfs_destroy(object); }

SquashfsWriter::SquashfsWriter(const std::string& path, const ConvertOptions& options)
    : path_(path), sq_(std::make_unique<Libsquashfs>()) {
  errno = 0;
  sq_->file.reset(sqfs_open_file(path.c_str(), SQFS_FILE_OPEN_OVERWRITE));
  if (!sq_->file) throw SystemError("opening " + path, errno != 0 ? errno : EIO);
  start(options);
}

SquashfsWriter::SquashfsWriter(int fd, std::uint64_t offset, const std::string& label, const ConvertOptions& options)
    : path_(label), sq_(std::make_unique<Libsquashfs>()) {
  sq_->file.reset(open_offset_file(fd, offset));
  start(options);
}

void SquashfsWriter::start(const ConvertOptions& options) {
  Libsquashfs& sq = *sq_;
  sq.block_size = options.block_size;
  if (sqfs_super_init(&sq.super, options.block_size, 0, compressor_id(options.compressor)) != 0)
    throw Error("squashfs block size " + std::to_string(options.block_size) +
                " is invalid: use a power of two from 4 KiB to 1 MiB");
  sq.compressor = create_compressor(options, false);
  // A decompressor, to read fragment blocks back when verifying a deduplication match.
  sq.decompressor = create_compressor(options, true);

  // The super block is rewritten at the end; the compressor options follow it.
  check(sqfs_super_write(&sq.super, sq.file.get()), "writing the super block");
  int ret = sq.compressor->write_options(sq.compressor.get(), sq.file.get());
  check(ret, "writing compressor options");
  if (ret > 0) sq.super.flags |= SQFS_FLAG_COMPRESSOR_OPTIONS;

  sq.ids.reset(sqfs_id_table_create(0));
  sq.fragments.reset(sqfs_frag_table_create(0));
  sq.blocks.reset(sqfs_block_writer_create(sq.file.get(), kDeviceBlockSize, 0));
  if (!sq.ids || !sq.fragments || !sq.blocks) throw std::bad_alloc();
  start_processor(compression_workers(options.workers));
}

void SquashfsWriter::start_processor(unsigned workers) {
  Libsquashfs& sq = *sq_;
  sqfs_block_processor_desc_t desc{};
  desc.size = sizeof(desc);
  desc.max_block_size = sq.block_size;
  desc.num_workers = workers;
  // Enough blocks in flight to keep every worker busy while the reader waits on
  // decompression; this is what bounds the data held in memory.
  desc.max_backlog = workers * 8;
  desc.cmp = sq.compressor.get();
  desc.wr = sq.blocks.get();
  desc.tbl = sq.fragments.get();
  desc.file = sq.file.get();
  desc.uncmp = sq.decompressor.get();
  sqfs_block_processor_t* processor = nullptr;
  check(sqfs_block_processor_create_ex(&desc, &processor), "starting the block processor");
  sq.processor.reset(processor);
}

SquashfsWriter::~SquashfsWriter() {
  if (sq_->processor) {
    // Abandoned midway (a bad layer): libsquashfs 1.2 leaks the block being filled and
    // the open fragment block when destroyed before they are flushed, so flush them
    // into the temporary file, which is about to be removed anyway.
    if (file_open_) sqfs_block_processor_end_file(sq_->processor.get());
    sqfs_block_processor_finish(sq_->processor.get());
    sq_->processor.reset();  // joins the workers before the inodes they update are freed
  }
  for (auto* inode : file_inodes_) sqfs_free(inode);
}

sqfs_inode_generic_t** SquashfsWriter::begin_file() {
  sqfs_inode_generic_t*& slot = file_inodes_.emplace_back(nullptr);
  // Identical files share their data. libsquashfs (>= 1.1) confirms a block match by
  // reading the candidate back and comparing bytes, and a fragment match the same way
  // through the decompressor given to the block processor: a checksum collision can
  // never give one file another's contents.
  check(sqfs_block_processor_begin_file(sq_->processor.get(), &slot, nullptr, 0), "starting a file");
  file_open_ = true;
  return &slot;
}

void SquashfsWriter::append(const void* data, std::size_t size) {
  // libsquashfs 1.2 crashes on a zero-length append before a file's first block exists
  // (an empty extra file); there is nothing to write anyway.
  if (size == 0) return;
  check(sqfs_block_processor_append(sq_->processor.get(), data, size), "writing file data");
}

void SquashfsWriter::append_zeros(std::uint64_t count) {
  static const std::array<char, 64 * 1024> zeros{};
  while (count > 0) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(count, zeros.size()));
    append(zeros.data(), n);
    count -= n;
  }
}

void SquashfsWriter::end_file() {
  file_open_ = false;
  check(sqfs_block_processor_end_file(sq_->processor.get()), "finishing a file");
}

namespace {

// Writes the inode and directory tables from the tree: every non-directory inode
// first, then the directories children-first, so that each directory entry can name
// an inode whose location is already known (hardlinks may point anywhere).
class TableWriter {
 public:
  TableWriter(sqfs_file_t* file, sqfs_compressor_t* compressor, sqfs_id_table_t* ids,
              std::optional<std::int64_t> mtime_limit)
      : ids_(ids),
        mtime_limit_(mtime_limit),
        inodes_(sqfs_meta_writer_create(file, compressor, 0)),
        dir_table_(sqfs_meta_writer_create(file, compressor, SQFS_META_WRITER_KEEP_IN_MEMORY)) {
    if (!inodes_ || !dir_table_) throw std::bad_alloc();
    dirs_.reset(sqfs_dir_writer_create(dir_table_.get(), 0));
    if (!dirs_) throw std::bad_alloc();
  }

  void count(Node& dir) {
    for (auto& [name, child] : dir.children) {
      switch (child->kind) {
        case Kind::Placeholder: break;
        case Kind::Hardlink:
          if (child->link_target->orphan && child->link_target->nlink == 0)
            non_directories_.push_back(child->link_target);
          ++child->link_target->nlink;
          break;
        case Kind::Directory: count(*child); break;
        default:
          ++child->nlink;
          non_directories_.push_back(child.get());
      }
    }
    directories_.push_back(&dir);
  }

  std::uint32_t number() {
    std::uint32_t next = 1;
    for (Node* n : non_directories_) n->inode_number = next++;
    for (Node* d : directories_) d->inode_number = next++;
    return next - 1;
  }

  std::uint64_t files() const {
    return static_cast<std::uint64_t>(
        std::count_if(non_directories_.begin(), non_directories_.end(), [](Node* n) { return n->kind == Kind::File; }));
  }

  void write_non_directories(const std::function<void(int, const char*)>& check) {
    for (Node* n : non_directories_) {
      sqfs_inode_generic_t* inode = nullptr;
      InodePtr owned;
      if (n->kind == Kind::File) {
        inode = *n->file_inode;  // owned by the SquashfsWriter
        if (n->nlink > 1) {
          check(sqfs_inode_make_extended(inode), "hardlinked file inode");
          inode->data.file_ext.nlink = n->nlink;
        }
      } else {
        std::size_t extra = n->kind == Kind::Symlink ? n->target.size() : 0;
        owned.reset(static_cast<sqfs_inode_generic_t*>(std::calloc(1, sizeof(sqfs_inode_generic_t) + extra)));
        if (!owned) throw std::bad_alloc();
        inode = owned.get();
        if (n->kind == Kind::Symlink) {
          inode->base.type = SQFS_INODE_SLINK;
          inode->data.slink.nlink = n->nlink;
          inode->data.slink.target_size = static_cast<sqfs_u32>(extra);
          std::memcpy(inode->extra, n->target.data(), extra);
          inode->payload_bytes_available = inode->payload_bytes_used = static_cast<sqfs_u32>(extra);
        } else {
          inode->base.type = SQFS_INODE_FIFO;
          inode->data.ipc.nlink = n->nlink;
        }
      }
      write(*n, inode, check);
    }
  }

  void write_directories(Node& root, const std::function<void(int, const char*)>& check, std::uint32_t inode_count) {
    write_directory(root, inode_count + 1, check);  // the root's parent: one past the last inode, as mksquashfs does
  }

  void finish(sqfs_file_t* file, sqfs_super_t& super, const std::function<void(int, const char*)>& check,
              std::uint64_t root_ref) {
    check(sqfs_meta_writer_flush(inodes_.get()), "inode table");
    check(sqfs_meta_writer_flush(dir_table_.get()), "directory table");
    super.root_inode_ref = root_ref;
    super.directory_table_start = file->get_size(file);
    check(sqfs_meta_write_write_to_file(dir_table_.get()), "directory table");
  }

 private:
  void write(Node& n, sqfs_inode_generic_t* inode, const std::function<void(int, const char*)>& check) {
    inode->base.mode = static_cast<sqfs_u16>(type_bits(n.kind) | (n.attrs.mode & 07777));
    check(sqfs_id_table_id_to_index(ids_, n.attrs.uid, &inode->base.uid_idx), "id table");
    check(sqfs_id_table_id_to_index(ids_, n.attrs.gid, &inode->base.gid_idx), "id table");
    inode->base.mod_time = limited_time(n.attrs.mtime);
    inode->base.inode_number = n.inode_number;
    sqfs_u64 block = 0;
    sqfs_u32 offset = 0;
    sqfs_meta_writer_get_position(inodes_.get(), &block, &offset);
    n.inode_ref = (block << 16) | offset;
    check(sqfs_meta_writer_write_inode(inodes_.get(), inode), "inode table");
  }

  void write_directory(Node& dir, std::uint32_t parent_number, const std::function<void(int, const char*)>& check) {
    std::uint32_t subdirectories = 0;
    for (auto& [name, child] : dir.children)
      if (child->kind == Kind::Directory) {
        write_directory(*child, dir.inode_number, check);
        ++subdirectories;
      }
    check(sqfs_dir_writer_begin(dirs_.get(), 0), "directory table");
    for (auto& [name, child] : dir.children) {
      if (child->kind == Kind::Placeholder) continue;
      const Node& target = child->kind == Kind::Hardlink ? *child->link_target : *child;
      check(sqfs_dir_writer_add_entry(dirs_.get(), name.c_str(), target.inode_number, target.inode_ref,
                                      static_cast<sqfs_u16>(type_bits(target.kind) | (target.attrs.mode & 07777))),
            "directory entry");
    }
    check(sqfs_dir_writer_end(dirs_.get()), "directory table");
    InodePtr inode(sqfs_dir_writer_create_inode(dirs_.get(), 2 + subdirectories, kNoXattr, parent_number));
    if (!inode) throw std::bad_alloc();
    write(dir, inode.get(), check);
  }

  sqfs_u32 limited_time(std::uint32_t t) const {
    return mtime_limit_ ? clamp_time(std::min<std::int64_t>(t, *mtime_limit_)) : t;
  }

  sqfs_id_table_t* ids_;
  std::optional<std::int64_t> mtime_limit_;
  SqfsPtr<sqfs_meta_writer_t> inodes_;
  SqfsPtr<sqfs_meta_writer_t> dir_table_;
  SqfsPtr<sqfs_dir_writer_t> dirs_;
  std::vector<Node*> non_directories_;
  std::vector<Node*> directories_;  // children before parents, the root last
};

}  // namespace

ImageCounts SquashfsWriter::finish(Node& root, std::optional<std::int64_t> mtime_limit) {
  Libsquashfs& sq = *sq_;
  auto checker = [this](int code, const char* what) { check(code, what); };
  check(sqfs_block_processor_finish(sq.processor.get()), "compressing file data");

  TableWriter tables(sq.file.get(), sq.compressor.get(), sq.ids.get(), mtime_limit);
  tables.count(root);
  std::uint32_t inode_count = tables.number();
  sq.super.inode_table_start = sq.file->get_size(sq.file.get());
  tables.write_non_directories(checker);
  tables.write_directories(root, checker, inode_count);
  tables.finish(sq.file.get(), sq.super, checker, root.inode_ref);

  check(sqfs_frag_table_write(sq.fragments.get(), sq.file.get(), &sq.super, sq.compressor.get()), "fragment table");
  check(sqfs_id_table_write(sq.ids.get(), sq.file.get(), &sq.super, sq.compressor.get()), "id table");
  sq.super.inode_count = inode_count;
  sq.super.flags |= SQFS_FLAG_NO_XATTRS;
  sq.super.xattr_id_table_start = 0xFFFFFFFFFFFFFFFFULL;
  sq.super.export_table_start = 0xFFFFFFFFFFFFFFFFULL;
  sq.super.modification_time = mtime_limit ? clamp_time(*mtime_limit) : root.attrs.mtime;
  sq.super.bytes_used = sq.file->get_size(sq.file.get());
  std::uint64_t padding = (kDeviceBlockSize - sq.super.bytes_used % kDeviceBlockSize) % kDeviceBlockSize;
  if (padding > 0) {
    static const std::array<char, kDeviceBlockSize> zeros{};
    check(sq.file->write_at(sq.file.get(), sq.super.bytes_used, zeros.data(), padding), "padding");
  }
  check(sqfs_super_write(&sq.super, sq.file.get()), "super block");

  ImageCounts counts;
  counts.inodes = inode_count;
  counts.files = tables.files();
  counts.bytes = sq.super.bytes_used + padding;
  sq.processor.reset();
  sq.file.reset();  // closes the file: everything is written
  return counts;
}

}  // namespace capsa::convert
