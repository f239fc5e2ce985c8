#include "util/start_phases.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace capsa::phases {
namespace {

int phase_fd() {
  static const int fd = [] {
    const char* value = std::getenv("CAPSA_PHASE_FD");
    if (value == nullptr || *value == '\0') return -1;
    const int n = std::atoi(value);
    if (n <= STDERR_FILENO || ::fcntl(n, F_SETFD, FD_CLOEXEC) != 0) return -1;
    return n;
  }();
  return fd;
}

}  // namespace

void mark(const char* name) {
  const int fd = phase_fd();
  if (fd < 0) return;
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  char line[96];
  const int length = std::snprintf(line, sizeof line, "%s %lld\n", name,
                                   static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
  if (length > 0) (void)!::write(fd, line, static_cast<std::size_t>(length));
}

}  // namespace capsa::phases
