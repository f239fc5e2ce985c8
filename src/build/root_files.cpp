#include "build/root_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "build/host_ops.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/path.hpp"

namespace capsa::build {

void in_chroot(runtime::RootMode mode, const std::string& rootfs, const std::string& what,
               const std::function<void()>& body) {
  as_build_root(mode, what, [&] {
    if (::chroot(rootfs.c_str()) != 0) throw_errno("chroot " + rootfs);
    if (::chdir("/") != 0) throw_errno("chdir / in " + rootfs);
    ::umask(022);
    body();
  });
}

void write_text(const std::string& path, const std::string& content, mode_t mode) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_errno("replace " + path);
  int raw = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (raw < 0) throw_errno("create " + path);
  UniqueFd fd(raw);
  try {
    write_all(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(content.data()), content.size()));
  } catch (const SystemError& e) {
    throw SystemError("write " + path, e.errno_value());
  }
  ::fchmod(fd.get(), mode);  // not narrowed by the umask
  if (::close(fd.release()) != 0) throw_errno("close " + path);
}

void make_directory(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0) {
    if (errno == EEXIST) return;
    throw_errno("create " + path);
  }
  ::chmod(path.c_str(), mode);
}

void make_directories(const std::string& path, mode_t mode) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    make_directory(path.substr(0, slash), mode);
  make_directory(path, mode);
}

std::string read_text(const std::string& path) {
  try {
    return read_whole_file(path);
  } catch (const SystemError& e) {
    if (e.errno_value() == ENOENT) return {};
    throw;
  }
}

}  // namespace capsa::build
