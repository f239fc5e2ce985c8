#include "runtime/command_prefetch.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "util/fd.hpp"
#include "util/find_executable.hpp"
#include "util/open_in_root.hpp"

namespace capsa::runtime {
namespace {

// Of one file: enough for the parts of a large program that its start touches first,
// without reading all of a 500 MB one.
constexpr off_t kReadAheadLimit = 16 << 20;
// What one posix_fadvise(WILLNEED) reads at most: the kernel caps each call at the file
// system's read-ahead window (force_page_cache_ra), 128 KiB on FUSE (a server cannot ask
// for more) and on a loop device unless root raised it. Asked in one call, all but the
// first 128 KiB of busybox were left to the exec's faults, seven round trips in a row.
constexpr off_t kReadAheadWindow = 128 << 10;

// The regular file at `path` in the image, with an execute bit when `executable`; no
// FIFO is opened for reading (it would block).
UniqueFd open_program(int root, const std::string& path, bool executable = true) {
  UniqueFd fd(open_in_root(root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || (executable && (st.st_mode & 0111) == 0)) return {};
  return fd;
}

// cpus_to_spare for this machine, now.
bool cpus_to_spare_now() {
  UniqueFd loadavg(::open("/proc/loadavg", O_RDONLY | O_CLOEXEC));
  char text[128] = {};
  if (!loadavg || ::read(loadavg.get(), text, sizeof text - 1) <= 0) return false;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (::sched_getaffinity(0, sizeof cpus, &cpus) != 0) return false;
  return cpus_to_spare(text, CPU_COUNT(&cpus));
}

// Asks the kernel to read the file ahead: all of it (at most kReadAheadLimit) when
// `whole`, else its first window.
void read_ahead(int fd, bool whole) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return;
  const off_t size = std::min<off_t>(st.st_size, whole ? kReadAheadLimit : kReadAheadWindow);
  for (off_t offset = 0; offset < size; offset += kReadAheadWindow)
    ::posix_fadvise(fd, offset, std::min(kReadAheadWindow, size - offset), POSIX_FADV_WILLNEED);
}

// The PT_INTERP of a 64-bit ELF program (its first page is read for it), if it has one.
std::optional<std::string> interpreter_of(int fd) {
  Elf64_Ehdr header{};
  if (::pread(fd, &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum > 64)
    return std::nullopt;
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    if (::pread(fd, &segment, sizeof segment, static_cast<off_t>(header.e_phoff + i * sizeof segment)) !=
        static_cast<ssize_t>(sizeof segment))
      return std::nullopt;
    if (segment.p_type != PT_INTERP) continue;
    if (segment.p_filesz < 2 || segment.p_filesz > 4096) return std::nullopt;
    std::string name(segment.p_filesz, '\0');
    if (::pread(fd, name.data(), name.size(), static_cast<off_t>(segment.p_offset)) !=
        static_cast<ssize_t>(name.size()))
      return std::nullopt;
    name.resize(std::strlen(name.c_str()));
    if (name.empty() || name[0] != '/') return std::nullopt;
    return name;
  }
  return std::nullopt;
}

// Where the exec will find `command` (action_without_shell's find_command): itself when
// it is absolute (a relative path that names a directory depends on the working
// directory: not read ahead), else the first executable file of that name on `path`.
UniqueFd find_program(int root, const std::string& command, const std::string& path) {
  if (command.find('/') != std::string::npos) return command[0] == '/' ? open_program(root, command) : UniqueFd();
  UniqueFd found;
  first_on_path(command, path, RelativeEntries::Skip, [&](const std::string& candidate) {
    found = open_program(root, candidate);
    return static_cast<bool>(found);
  });
  return found;
}

}  // namespace

bool cpus_to_spare(const std::string& loadavg, int cpus) {
  long runnable = 0;
  if (std::sscanf(loadavg.c_str(), "%*f %*f %*f %ld/", &runnable) != 1) return false;
  return runnable <= 4L * cpus;
}

CommandPrefetch CommandPrefetch::start(const std::string& image_root, const std::string& command,
                                       const std::string& path, ReadAhead how) {
  CommandPrefetch prefetch;
  if (command.empty()) return prefetch;
  UniqueFd root(::open(image_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return prefetch;
  prefetch.thread_ = std::thread([root = std::move(root), command, path, how] {
    UniqueFd program = find_program(root.get(), command, path);
    if (!program) return;
    const bool whole = how == ReadAhead::Whole || (how == ReadAhead::AsCpusAllow && cpus_to_spare_now());
    read_ahead(program.get(), whole);
    if (std::optional<std::string> interpreter = interpreter_of(program.get()))
      if (UniqueFd loader = open_program(root.get(), *interpreter, false)) read_ahead(loader.get(), whole);
  });
  return prefetch;
}

}  // namespace capsa::runtime
