#include "util/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace capsa {
namespace {

using SteadyClock = std::chrono::steady_clock;

double seconds_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string rate_text(std::uint64_t bytes, double seconds) {
  if (seconds <= 0.05) return "";
  return format_bytes(static_cast<std::uint64_t>(static_cast<double>(bytes) / seconds)) + "/s";
}

}  // namespace

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", value, units[unit]);
  return buf;
}

std::string format_duration(std::chrono::seconds duration) {
  long long s = duration.count();
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

Progress::Mode Progress::detect_mode(bool quiet, int fd) {
  if (quiet) return Mode::Quiet;
  return ::isatty(fd) ? Mode::Terminal : Mode::Log;
}

Progress::Progress(Mode mode, Sink sink, Clock clock, std::chrono::seconds log_interval)
    : mode_(mode), sink_(std::move(sink)), clock_(std::move(clock)), log_interval_(log_interval) {
  if (mode_ != Mode::Terminal) return;  // elsewhere messages and progress lines just follow each other
  log_above_ = std::make_unique<log::ScopedSink>(
      [this, shown = log::current_sink()](log::Level level, std::string_view message) {
        std::lock_guard lock(mutex_);
        erase_locked();
        shown(level, message);
        redraw_locked(true);
      });
}

Progress::Progress(Mode mode)
    : Progress(mode, [](const std::string& text) {
        std::fwrite(text.data(), 1, text.size(), stderr);
        std::fflush(stderr);
      }) {}

void Progress::start(const std::string& task, std::uint64_t total_bytes) {
  if (mode_ == Mode::Quiet) return;
  std::lock_guard lock(mutex_);
  auto now = clock_();
  if (active_.empty() && finished_bytes_ == 0) begun_ = last_draw_ = now;
  active_[task] = Task{total_bytes, 0, now};
  planned_bytes_ += total_bytes;
  if (mode_ == Mode::Log) sink_(task + ": started (" + format_bytes(total_bytes) + ")\n");
  else redraw_locked(true);
}

void Progress::update(const std::string& task, std::uint64_t done_bytes) {
  if (mode_ == Mode::Quiet) return;
  std::lock_guard lock(mutex_);
  auto it = active_.find(task);
  if (it == active_.end()) return;
  it->second.done = done_bytes;
  auto now = clock_();
  if (mode_ == Mode::Terminal) {
    redraw_locked(false);
  } else if (now - last_draw_ >= log_interval_) {
    last_draw_ = now;
    sink_(total_line(now) + "\n");
  }
}

void Progress::finish(const std::string& task) {
  if (mode_ == Mode::Quiet) return;
  std::lock_guard lock(mutex_);
  auto it = active_.find(task);
  if (it == active_.end()) return;
  auto now = clock_();
  Task done = it->second;
  active_.erase(it);
  finished_bytes_ += done.total;
  std::string line = task + ": done, " + format_bytes(done.total) + " in " +
                     format_duration(std::chrono::seconds(static_cast<long long>(seconds_between(done.started, now))));
  if (std::string rate = rate_text(done.total, seconds_between(done.started, now)); !rate.empty())
    line += " (" + rate + ")";
  if (mode_ == Mode::Log) {
    sink_(line + "\n");
  } else {
    erase_locked();
    sink_(line + "\n");
    redraw_locked(true);
  }
}

void Progress::note(const std::string& line) {
  if (mode_ == Mode::Quiet) return;
  std::lock_guard lock(mutex_);
  if (mode_ == Mode::Terminal) erase_locked();
  sink_(line + "\n");
  if (mode_ == Mode::Terminal) redraw_locked(true);
}

std::string Progress::task_line(const std::string& name, const Task& task, SteadyClock::time_point now) const {
  constexpr int kBarWidth = 24;
  int filled = task.total == 0 ? kBarWidth : static_cast<int>(kBarWidth * static_cast<double>(task.done) / static_cast<double>(task.total));
  if (filled > kBarWidth) filled = kBarWidth;
  std::string line = name + " [" + std::string(static_cast<std::size_t>(filled), '#') +
                     std::string(static_cast<std::size_t>(kBarWidth - filled), '.') + "] " + format_bytes(task.done) +
                     " / " + format_bytes(task.total);
  double elapsed = seconds_between(task.started, now);
  if (std::string rate = rate_text(task.done, elapsed); !rate.empty()) {
    line += "  " + rate;
    if (task.done > 0 && task.total > task.done) {
      double eta = elapsed * static_cast<double>(task.total - task.done) / static_cast<double>(task.done);
      line += "  ETA " + format_duration(std::chrono::seconds(static_cast<long long>(eta)));
    }
  }
  return line;
}

std::string Progress::total_line(SteadyClock::time_point now) const {
  std::uint64_t done = finished_bytes_;
  for (const auto& [name, task] : active_) done += task.done;
  std::string line = "total: " + format_bytes(done) + " / " + format_bytes(planned_bytes_);
  double elapsed = seconds_between(begun_, now);
  if (std::string rate = rate_text(done, elapsed); !rate.empty()) {
    line += ", " + rate;
    if (done > 0 && planned_bytes_ > done) {
      double eta = elapsed * static_cast<double>(planned_bytes_ - done) / static_cast<double>(done);
      line += ", ETA " + format_duration(std::chrono::seconds(static_cast<long long>(eta)));
    }
  }
  return line;
}

// Moves the cursor up over the live block and clears it (ANSI: cursor up, erase line).
void Progress::erase_locked() {
  std::string text;
  for (std::size_t i = 0; i < drawn_lines_; ++i) text += "\x1b[1A\x1b[2K";
  if (!text.empty()) sink_(text);
  drawn_lines_ = 0;
}

void Progress::redraw_locked(bool force) {
  auto now = clock_();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  erase_locked();
  if (active_.empty()) return;
  std::string text;
  for (const auto& [name, task] : active_) text += task_line(name, task, now) + "\n";
  text += total_line(now) + "\n";
  drawn_lines_ = active_.size() + 1;
  sink_(text);
}

}  // namespace capsa
