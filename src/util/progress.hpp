#pragma once
// Progress of long work (downloads, conversion). On a terminal: one live line per task
// with bytes, rate and ETA, plus a total, redrawn at most 10 times a second. Not on a
// terminal (Slurm output files): one line when a task starts and finishes, and a
// one-line total at most every `log_interval`. Quiet: nothing. Safe to call from
// several threads. On a terminal, messages of util/log.hpp written while it lives are
// printed above the live lines, which are redrawn after them.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "util/log.hpp"

namespace capsa {

class Progress {
 public:
  enum class Mode { Quiet, Terminal, Log };
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Sink = std::function<void(const std::string&)>;  // receives ready-to-print text

  // Quiet when asked, Terminal when `fd` is a TTY, Log otherwise.
  static Mode detect_mode(bool quiet, int fd);

  Progress(Mode mode, Sink sink, Clock clock = std::chrono::steady_clock::now,
           std::chrono::seconds log_interval = std::chrono::seconds(10));
  // Writes to stderr.
  explicit Progress(Mode mode);

  void start(const std::string& task, std::uint64_t total_bytes);
  void update(const std::string& task, std::uint64_t done_bytes);
  void finish(const std::string& task);
  // A progress notice that must not be overwritten by the live display (warnings go to
  // util/log.hpp, which shows them above it too).
  void note(const std::string& line);

  Mode mode() const { return mode_; }

 private:
  struct Task {
    std::uint64_t total = 0;
    std::uint64_t done = 0;
    std::chrono::steady_clock::time_point started;
  };
  void redraw_locked(bool force);
  void erase_locked();
  std::string task_line(const std::string& name, const Task& task, std::chrono::steady_clock::time_point now) const;
  std::string total_line(std::chrono::steady_clock::time_point now) const;

  Mode mode_;
  Sink sink_;
  Clock clock_;
  std::chrono::seconds log_interval_;
  std::mutex mutex_;
  std::map<std::string, Task> active_;
  std::uint64_t finished_bytes_ = 0;
  std::uint64_t planned_bytes_ = 0;
  std::chrono::steady_clock::time_point begun_{};
  std::chrono::steady_clock::time_point last_draw_{};
  std::size_t drawn_lines_ = 0;
  std::unique_ptr<log::ScopedSink> log_above_;  // last: gone before anything it uses
};

// "1.5 GiB", "12.0 MiB", "512 B": for progress displays (not siftool's format).
std::string format_bytes(std::uint64_t bytes);
// "1:02:03" or "2:05".
std::string format_duration(std::chrono::seconds seconds);

}  // namespace capsa
