#pragma once
// A stand-in for the kernel in front of capsa's FUSE server (squashfs/fuse_server.hpp):
// requests encoded as the kernel sends them (<linux/fuse.h>), handed to a libfuse
// session of the server through a custom channel (FuseImage::new_session), and the
// replies decoded. No /dev/fuse, no mount, no privilege: the tests and the fuzzer
// (tests/fuzz/fuzz_fuse_server.cpp) reach the server's request handlers this way.
// A reply the protocol does not allow (wrong length or id, no reply or two, a listing
// entry that overflows its buffer or whose name is not one path component) throws
// ProtocolError, which is no capsa::Error: the fuzzer must not take it for a clean
// refusal.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct fuse_session;

namespace capsa::squashfs {
class FuseImage;
}

namespace capsa::test {

class ProtocolError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct FuseAttributes {
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::uint32_t mode = 0;  // type and permission bits
  std::uint32_t nlink = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint32_t rdev = 0;
  std::uint64_t mtime = 0;
};

struct FuseEntry {
  std::uint64_t nodeid = 0;  // 0: a negative entry (the name does not exist)
  FuseAttributes attr;
};

struct FuseDirent {
  std::string name;
  std::uint64_t ino = 0;
  std::uint32_t type = 0;          // DT_* as in readdir(3)
  std::uint64_t offset = 0;        // where the next READDIR continues
  std::optional<FuseEntry> entry;  // READDIRPLUS only
};

class FuseDriver {
 public:
  // Starts a session of `server` and sends INIT. `opens_without_asking`: the kernel
  // offers to open files and directories without OPEN/OPENDIR (as Linux does), which the
  // server accepts; false, it must answer OPEN and OPENDIR itself.
  FuseDriver(squashfs::FuseImage& server, bool opens_without_asking);
  ~FuseDriver();
  FuseDriver(const FuseDriver&) = delete;
  FuseDriver& operator=(const FuseDriver&) = delete;

  // Each returns 0 or the errno the server answered with.
  int lookup(std::uint64_t parent, const std::string& name, FuseEntry& entry);
  int getattr(std::uint64_t ino, FuseAttributes& attr);
  int readlink(std::uint64_t ino, std::string& target);
  int opendir(std::uint64_t ino, std::uint64_t& fh);
  int readdir(std::uint64_t ino, std::uint64_t fh, std::uint64_t offset, std::uint32_t size, bool plus,
              std::vector<FuseDirent>& entries);
  int releasedir(std::uint64_t ino, std::uint64_t fh);
  int open(std::uint64_t ino, std::uint64_t& fh);
  int read(std::uint64_t ino, std::uint64_t fh, std::uint64_t offset, std::uint32_t size, std::string& data);
  int statfs(std::uint64_t ino);
  int getxattr(std::uint64_t ino, const std::string& name, std::uint32_t size);
  int listxattr(std::uint64_t ino, std::uint32_t size);
  void forget(std::uint64_t ino, std::uint64_t lookups);  // answered by no reply

  // A whole directory as `ls` reads it: OPENDIR (where the kernel must ask), READDIR or
  // READDIRPLUS in `chunk`-byte replies from offset 0 until an empty one, RELEASEDIR.
  int list(std::uint64_t ino, bool plus, std::uint32_t chunk, std::vector<FuseDirent>& entries);
  // A whole file (at most `limit` bytes) in `chunk`-byte READs, opened the same way.
  int read_all(std::uint64_t ino, std::uint32_t chunk, std::uint64_t limit, std::string& data);

  bool opens_without_asking() const { return opens_without_asking_; }

  // Used by the channel's hooks (private to fuse_driver.cpp).
  void collect_reply(const void* data, std::size_t size);

 private:
  // Sends one request; returns the reply's payload through `payload` and its errno.
  int call(std::uint32_t opcode, std::uint64_t nodeid, const std::string& body, std::string* payload,
           bool expect_reply = true);

  fuse_session* session_ = nullptr;
  bool opens_without_asking_;
  std::uint64_t next_unique_ = 1;
  std::vector<std::string> replies_;
};

// What fuse_walk may do: how deep, how many entries in all, how much of each file.
struct FuseWalkLimits {
  int depth = 8;
  int entries = 256;
  std::uint64_t file_bytes = 1 << 18;
};

// Everything a container could ask of the image, from the root down: each directory
// listed (READDIR in small replies, READDIRPLUS), each name looked up and its attributes
// read, symlinks read, files read in chunks and past their end, names that are missing
// or below a file looked up, then every node forgotten. Errors the server answers are
// expected (a hostile image); only a ProtocolError escapes.
void fuse_walk(FuseDriver& driver, const FuseWalkLimits& limits = {});

}  // namespace capsa::test
