#pragma once
// File descriptors that close themselves, and the few I/O helpers every reader needs.

#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace capsa {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC; throws SystemError naming `path`.
UniqueFd open_file(const std::string& path, int flags, unsigned mode = 0);

// Size of the file behind fd (fstat).
std::uint64_t file_size(int fd);

// Reads exactly buf.size() bytes at `offset`; throws FormatError naming `what` on a short read.
void read_exact_at(int fd, std::span<std::uint8_t> buf, std::uint64_t offset, const std::string& what);

// Writes all of buf at `offset`, retrying short writes; throws SystemError.
void write_all_at(int fd, std::span<const std::uint8_t> buf, std::uint64_t offset);

// Writes all of buf to the current position of fd (a pipe or stdout).
void write_all(int fd, std::span<const std::uint8_t> buf);

// Copies `length` bytes starting at `offset` of in_fd to out_fd (its current position).
void copy_range_to(int in_fd, std::uint64_t offset, std::uint64_t length, int out_fd);

// Whole file into memory; for small inputs only (definition files, JSON).
std::string read_whole_file(const std::string& path);

// Everything left to read on fd (a pipe), until end of file; throws SystemError naming `what`.
std::string read_to_end(int fd, const std::string& what);

// The two ends of a pipe2(O_CLOEXEC); throws SystemError.
struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};
Pipe make_pipe();

}  // namespace capsa
