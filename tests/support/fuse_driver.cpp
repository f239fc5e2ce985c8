#define FUSE_USE_VERSION 312
#include "support/fuse_driver.hpp"

#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <linux/fuse.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "squashfs/fuse_server.hpp"

namespace capsa::test {
namespace {

// The driver a request is being processed for: libfuse hands the channel's hooks the
// server's userdata, not ours. Requests are processed on the calling thread.
thread_local FuseDriver* current = nullptr;

ssize_t channel_writev(int, struct iovec* iov, int count, void*) {
  std::string reply;
  for (int i = 0; i < count; ++i) reply.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  if (current == nullptr) std::abort();  // a reply outside any request; nothing may unwind through libfuse
  current->collect_reply(reply.data(), reply.size());
  return static_cast<ssize_t>(reply.size());
}

// Requests are handed over with fuse_session_process_buf, never read from the channel.
ssize_t channel_read(int, void*, size_t, void*) {
  errno = EIO;
  return -1;
}

const fuse_custom_io kChannel = {channel_writev, channel_read, nullptr, nullptr};

template <typename T>
std::string bytes_of(const T& value) {
  return std::string(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T read_struct(const std::string& payload, std::size_t at = 0) {
  T value{};
  if (at > payload.size() || payload.size() - at < sizeof value)
    throw ProtocolError("a reply of " + std::to_string(payload.size()) + " bytes is too short");
  std::memcpy(&value, payload.data() + at, sizeof value);
  return value;
}

FuseAttributes attributes_of(const fuse_attr& a) {
  return {a.ino, a.size, a.mode, a.nlink, a.uid, a.gid, a.rdev, a.mtime};
}

FuseEntry entry_of(const fuse_entry_out& e) { return {e.nodeid, attributes_of(e.attr)}; }

// A listing entry's name must be one path component; "." and ".." come first, as the
// server numbers them (offsets 1 and 2).
void check_listed_name(std::string_view name, std::uint64_t offset) {
  if (name.empty() || name.find_first_of(std::string_view("/\0", 2)) != name.npos)
    throw ProtocolError("a listing entry named \"" + std::string(name) + "\"");
  if ((name == "." && offset != 1) || (name == ".." && offset != 2))
    throw ProtocolError("a listing entry \"" + std::string(name) + "\" at offset " + std::to_string(offset));
}

}  // namespace

FuseDriver::FuseDriver(squashfs::FuseImage& server, bool opens_without_asking)
    : opens_without_asking_(opens_without_asking) {
  session_ = server.new_session();
  if (session_ == nullptr) throw std::runtime_error("libfuse made no session");
  int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);  // the session closes it when destroyed
  if (fd < 0 || fuse_session_custom_io(session_, &kChannel, fd) != 0) {
    if (fd >= 0) ::close(fd);
    fuse_session_destroy(session_);
    throw std::runtime_error("libfuse refused the custom channel");
  }
  fuse_init_in init{};
  init.major = FUSE_KERNEL_VERSION;
  init.minor = FUSE_KERNEL_MINOR_VERSION;
  init.max_readahead = 128 << 10;
  init.flags = FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO | FUSE_CACHE_SYMLINKS |
               FUSE_MAX_PAGES | FUSE_PARALLEL_DIROPS;
  if (opens_without_asking) init.flags |= FUSE_NO_OPEN_SUPPORT | FUSE_NO_OPENDIR_SUPPORT;
  std::string reply;
  int err = call(FUSE_INIT, 0, bytes_of(init), &reply);
  if (err != 0) {
    fuse_session_destroy(session_);
    throw ProtocolError("INIT failed: " + std::string(std::strerror(err)));
  }
}

FuseDriver::~FuseDriver() { fuse_session_destroy(session_); }

void FuseDriver::collect_reply(const void* data, std::size_t size) {
  replies_.emplace_back(static_cast<const char*>(data), size);
}

int FuseDriver::call(std::uint32_t opcode, std::uint64_t nodeid, const std::string& body, std::string* payload,
                     bool expect_reply) {
  fuse_in_header header{};
  header.len = static_cast<std::uint32_t>(sizeof header + body.size());
  header.opcode = opcode;
  header.unique = next_unique_++;
  header.nodeid = nodeid;
  header.uid = ::getuid();
  header.gid = ::getgid();
  header.pid = static_cast<std::uint32_t>(::getpid());
  // 8-byte aligned, as the kernel's requests are: libfuse reads the structs in place.
  std::vector<std::uint64_t> request((header.len + 7) / 8);
  std::memcpy(request.data(), &header, sizeof header);
  std::memcpy(reinterpret_cast<char*>(request.data()) + sizeof header, body.data(), body.size());
  fuse_buf buffer{};
  buffer.mem = request.data();
  buffer.size = header.len;

  replies_.clear();
  current = this;
  fuse_session_process_buf(session_, &buffer);
  current = nullptr;
  if (!expect_reply) {
    if (!replies_.empty()) throw ProtocolError("a reply to a request that takes none");
    return 0;
  }
  if (replies_.size() != 1)
    throw ProtocolError(std::to_string(replies_.size()) + " replies to request " + std::to_string(opcode));
  const std::string& reply = replies_.front();
  auto out = read_struct<fuse_out_header>(reply);
  if (out.len != reply.size()) throw ProtocolError("a reply whose header gives the wrong length");
  if (out.unique != header.unique) throw ProtocolError("a reply to another request");
  if (out.error > 0 || out.error <= -4096) throw ProtocolError("a reply with error " + std::to_string(out.error));
  if (out.error != 0 && reply.size() != sizeof out) throw ProtocolError("an error reply with a payload");
  if (payload != nullptr) payload->assign(reply, sizeof out);
  return -out.error;
}

int FuseDriver::lookup(std::uint64_t parent, const std::string& name, FuseEntry& entry) {
  std::string reply;
  int err = call(FUSE_LOOKUP, parent, name + '\0', &reply);
  if (err != 0) return err;
  if (reply.size() != sizeof(fuse_entry_out)) throw ProtocolError("a LOOKUP reply of the wrong size");
  entry = entry_of(read_struct<fuse_entry_out>(reply));
  return entry.nodeid == 0 ? ENOENT : 0;  // a negative entry
}

int FuseDriver::getattr(std::uint64_t ino, FuseAttributes& attr) {
  std::string reply;
  int err = call(FUSE_GETATTR, ino, bytes_of(fuse_getattr_in{}), &reply);
  if (err != 0) return err;
  if (reply.size() != sizeof(fuse_attr_out)) throw ProtocolError("a GETATTR reply of the wrong size");
  attr = attributes_of(read_struct<fuse_attr_out>(reply).attr);
  return 0;
}

int FuseDriver::readlink(std::uint64_t ino, std::string& target) { return call(FUSE_READLINK, ino, "", &target); }

int FuseDriver::opendir(std::uint64_t ino, std::uint64_t& fh) {
  fuse_open_in in{};
  in.flags = O_RDONLY | O_DIRECTORY;
  std::string reply;
  int err = call(FUSE_OPENDIR, ino, bytes_of(in), &reply);
  if (err != 0) return err;
  if (reply.size() != sizeof(fuse_open_out)) throw ProtocolError("an OPENDIR reply of the wrong size");
  fh = read_struct<fuse_open_out>(reply).fh;
  return 0;
}

int FuseDriver::readdir(std::uint64_t ino, std::uint64_t fh, std::uint64_t offset, std::uint32_t size, bool plus,
                        std::vector<FuseDirent>& entries) {
  fuse_read_in in{};
  in.fh = fh;
  in.offset = offset;
  in.size = size;
  std::string reply;
  int err = call(plus ? FUSE_READDIRPLUS : FUSE_READDIR, ino, bytes_of(in), &reply);
  if (err != 0) return err;
  if (reply.size() > size) throw ProtocolError("a listing larger than the buffer asked for");
  std::uint64_t last = offset;
  for (std::size_t at = 0; at < reply.size();) {
    FuseDirent dirent;
    std::size_t name_at = 0;
    fuse_dirent d{};
    if (plus) {
      auto p = read_struct<fuse_direntplus>(reply, at);
      d = p.dirent;
      dirent.entry = entry_of(p.entry_out);
      name_at = at + FUSE_NAME_OFFSET_DIRENTPLUS;
    } else {
      d = read_struct<fuse_dirent>(reply, at);
      name_at = at + FUSE_NAME_OFFSET;
    }
    std::size_t record = FUSE_DIRENT_ALIGN(name_at - at + d.namelen);
    if (d.namelen > reply.size() - name_at || record > reply.size() - at)
      throw ProtocolError("a listing entry past the end of its reply");
    dirent.name.assign(reply, name_at, d.namelen);
    dirent.ino = d.ino;
    dirent.type = d.type;
    dirent.offset = d.off;
    if (d.off <= last) throw ProtocolError("listing offsets that do not increase");
    last = d.off;
    check_listed_name(dirent.name, dirent.offset);
    entries.push_back(std::move(dirent));
    at += record;
  }
  return 0;
}

int FuseDriver::releasedir(std::uint64_t ino, std::uint64_t fh) {
  fuse_release_in in{};
  in.fh = fh;
  return call(FUSE_RELEASEDIR, ino, bytes_of(in), nullptr);
}

int FuseDriver::open(std::uint64_t ino, std::uint64_t& fh) {
  fuse_open_in in{};
  in.flags = O_RDONLY;
  std::string reply;
  int err = call(FUSE_OPEN, ino, bytes_of(in), &reply);
  if (err != 0) return err;
  if (reply.size() != sizeof(fuse_open_out)) throw ProtocolError("an OPEN reply of the wrong size");
  fh = read_struct<fuse_open_out>(reply).fh;
  return 0;
}

int FuseDriver::read(std::uint64_t ino, std::uint64_t fh, std::uint64_t offset, std::uint32_t size, std::string& data) {
  fuse_read_in in{};
  in.fh = fh;
  in.offset = offset;
  in.size = size;
  int err = call(FUSE_READ, ino, bytes_of(in), &data);
  if (err == 0 && data.size() > size) throw ProtocolError("a READ reply larger than asked for");
  return err;
}

int FuseDriver::statfs(std::uint64_t ino) {
  std::string reply;
  int err = call(FUSE_STATFS, ino, "", &reply);
  if (err == 0 && reply.size() != sizeof(fuse_statfs_out)) throw ProtocolError("a STATFS reply of the wrong size");
  return err;
}

int FuseDriver::getxattr(std::uint64_t ino, const std::string& name, std::uint32_t size) {
  fuse_getxattr_in in{};
  in.size = size;
  return call(FUSE_GETXATTR, ino, bytes_of(in) + name + '\0', nullptr);
}

int FuseDriver::listxattr(std::uint64_t ino, std::uint32_t size) {
  fuse_getxattr_in in{};
  in.size = size;
  std::string reply;
  int err = call(FUSE_LISTXATTR, ino, bytes_of(in), &reply);
  if (err == 0 && size == 0 && reply.size() != sizeof(fuse_getxattr_out))
    throw ProtocolError("a LISTXATTR size reply of the wrong size");
  if (err == 0 && size != 0 && reply.size() > size) throw ProtocolError("a LISTXATTR reply larger than asked for");
  return err;
}

void FuseDriver::forget(std::uint64_t ino, std::uint64_t lookups) {
  fuse_forget_in in{};
  in.nlookup = lookups;
  call(FUSE_FORGET, ino, bytes_of(in), nullptr, false);
}

int FuseDriver::list(std::uint64_t ino, bool plus, std::uint32_t chunk, std::vector<FuseDirent>& entries) {
  std::uint64_t fh = 0;
  if (!opens_without_asking_) {
    int err = opendir(ino, fh);
    if (err != 0) return err;
  }
  int err = 0;
  for (std::uint64_t offset = 0;;) {
    std::size_t before = entries.size();
    err = readdir(ino, fh, offset, chunk, plus, entries);
    if (err != 0 || entries.size() == before) break;
    offset = entries.back().offset;
  }
  if (!opens_without_asking_ && releasedir(ino, fh) != 0) throw ProtocolError("RELEASEDIR failed");
  return err;
}

int FuseDriver::read_all(std::uint64_t ino, std::uint32_t chunk, std::uint64_t limit, std::string& data) {
  std::uint64_t fh = 0;
  if (!opens_without_asking_) {
    int err = open(ino, fh);
    if (err != 0) return err;
  }
  data.clear();
  while (data.size() < limit) {
    std::string part;
    auto size = static_cast<std::uint32_t>(std::min<std::uint64_t>(chunk, limit - data.size()));
    int err = read(ino, fh, data.size(), size, part);
    if (err != 0) return err;
    if (part.empty()) break;
    data += part;
  }
  return 0;
}

namespace {

struct Walk {
  FuseDriver& driver;
  const FuseWalkLimits& limits;
  int budget;
  std::vector<std::uint64_t> looked_up;

  void file(std::uint64_t ino, const FuseAttributes& attr) {
    std::string data;
    if (driver.read_all(ino, 64 << 10, limits.file_bytes, data) != 0) return;
    if (data.size() > attr.size) throw ProtocolError("a file read longer than its size");
    std::string tail;
    std::uint64_t fh = 0;
    if (!driver.opens_without_asking() && driver.open(ino, fh) != 0) return;
    // Past the end: nothing. Across the last block boundary: what the size leaves.
    if (driver.read(ino, fh, attr.size, 4096, tail) == 0 && !tail.empty())
      throw ProtocolError("a read past the end of a file returned data");
    if (attr.size > 100 && driver.read(ino, fh, attr.size - 100, 4096, tail) == 0 && tail.size() != 100)
      throw ProtocolError("a read of a file's last 100 bytes returned " + std::to_string(tail.size()));
  }

  void directory(std::uint64_t ino, int depth) {
    std::vector<FuseDirent> plain, plus;
    int plain_err = driver.list(ino, false, 512, plain);  // small replies: the listing resumes at offsets
    int plus_err = driver.list(ino, true, 8192, plus);
    if (plain_err != 0) return;
    if (plus_err == 0) {
      if (plain.size() != plus.size()) throw ProtocolError("READDIR and READDIRPLUS list different entries");
      for (std::size_t i = 0; i < plain.size(); ++i)
        if (plain[i].name != plus[i].name) throw ProtocolError("READDIR and READDIRPLUS list different names");
    }
    FuseEntry missing;
    driver.lookup(ino, "\x7f-not-in-the-image", missing);
    for (const FuseDirent& listed : plain) {
      if (listed.name == "." || listed.name == "..") continue;
      if (--budget < 0) return;
      FuseEntry entry;
      if (driver.lookup(ino, listed.name, entry) != 0) continue;
      looked_up.push_back(entry.nodeid);
      FuseAttributes attr;
      if (driver.getattr(entry.nodeid, attr) != 0) continue;
      if (S_ISDIR(attr.mode)) {
        if (depth > 0) directory(entry.nodeid, depth - 1);
      } else if (S_ISLNK(attr.mode)) {
        std::string target;
        driver.readlink(entry.nodeid, target);
      } else if (S_ISREG(attr.mode)) {
        FuseEntry below;
        if (driver.lookup(entry.nodeid, "below-a-file", below) != ENOTDIR)
          throw ProtocolError("a name below a file was not refused with ENOTDIR");
        file(entry.nodeid, attr);
      }
    }
  }
};

}  // namespace

void fuse_walk(FuseDriver& driver, const FuseWalkLimits& limits) {
  FuseAttributes root;
  if (driver.getattr(FUSE_ROOT_ID, root) == 0 && !S_ISDIR(root.mode))
    throw ProtocolError("the root is not a directory");
  driver.statfs(FUSE_ROOT_ID);
  driver.getxattr(FUSE_ROOT_ID, "user.capsa", 0);
  driver.listxattr(FUSE_ROOT_ID, 0);
  driver.listxattr(FUSE_ROOT_ID, 256);
  Walk walk{driver, limits, limits.entries, {}};
  walk.directory(FUSE_ROOT_ID, limits.depth);
  for (std::uint64_t ino : walk.looked_up) driver.forget(ino, 1);
}

}  // namespace capsa::test
