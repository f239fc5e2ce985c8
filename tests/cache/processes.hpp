#pragma once
// Real concurrent processes for the cache tests: fork children that start together and
// report success through their exit status.
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace capsa::cache::test {

// Children block in wait() until the parent calls open(): they then start at once.
class StartGate {
 public:
  StartGate();
  ~StartGate();
  void wait() const;   // in a child
  void open();         // in the parent
 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
};

// Forks a child that runs `body` and exits 0 when it returns true. A child still
// running after `hang_guard_seconds` is killed by SIGALRM (a hang fails, never stalls).
pid_t spawn(const std::function<bool()>& body, unsigned hang_guard_seconds = 60);

// Waits for the child; its exit code, or 128 + signal.
int wait_for(pid_t pid);

// Bytes 0..size-1 of a fixed pattern (the content every racer must end up reading).
std::string pattern(std::size_t size, std::size_t offset = 0);

// Number of lines in `path` (0 when absent): how many producers ran.
int count_lines(const std::string& path);
void append_line(const std::string& path, const std::string& line);

// Everything readable from fd from offset 0.
std::string read_all(int fd);

}  // namespace capsa::cache::test
