#include "util/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "util/error.hpp"

namespace capsa {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

UniqueFd::~UniqueFd() { reset(); }

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

UniqueFd open_file(const std::string& path, int flags, unsigned mode) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) throw_errno(path);
  return UniqueFd(fd);
}

std::uint64_t file_size(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("fstat");
  return static_cast<std::uint64_t>(st.st_size);
}

void read_exact_at(int fd, std::span<std::uint8_t> buf, std::uint64_t offset, const std::string& what) {
  std::size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::pread(fd, buf.data() + done, buf.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("reading " + what);
    }
    if (n == 0) throw FormatError(what + " is truncated (file ends at byte " + std::to_string(offset + done) + ")");
    done += static_cast<std::size_t>(n);
  }
}

void write_all_at(int fd, std::span<const std::uint8_t> buf, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::pwrite(fd, buf.data() + done, buf.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write");
    }
    done += static_cast<std::size_t>(n);
  }
}

void write_all(int fd, std::span<const std::uint8_t> buf) {
  std::size_t done = 0;
  while (done < buf.size()) {
    ssize_t n = ::write(fd, buf.data() + done, buf.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("write");
    }
    done += static_cast<std::size_t>(n);
  }
}

void copy_range_to(int in_fd, std::uint64_t offset, std::uint64_t length, int out_fd) {
  std::vector<std::uint8_t> buf(1 << 20);
  while (length > 0) {
    std::size_t chunk = length < buf.size() ? static_cast<std::size_t>(length) : buf.size();
    read_exact_at(in_fd, std::span(buf.data(), chunk), offset, "object data");
    write_all(out_fd, std::span<const std::uint8_t>(buf.data(), chunk));
    offset += chunk;
    length -= chunk;
  }
}

std::string read_whole_file(const std::string& path) {
  UniqueFd fd = open_file(path, O_RDONLY);
  return read_to_end(fd.get(), path);
}

std::string read_to_end(int fd, const std::string& what) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(what);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace capsa
