#include "util/log.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

namespace capsa::log {
namespace {

// A sink as set, with the process that set it. Never freed, so that a thread still
// calling one that was just replaced does not touch freed memory; all stay reachable
// through `made` (a handful per process: the command line's, one per progress display).
struct Installed {
  Sink sink;
  pid_t owner;
  Installed* made_before;
};

std::atomic<int> threshold{static_cast<int>(Level::info)};
std::atomic<const Installed*> current{nullptr};
std::atomic<Installed*> made{nullptr};

const Installed* install(Sink sink) {
  auto* node = new Installed{std::move(sink), ::getpid(), made.load()};
  while (!made.compare_exchange_weak(node->made_before, node)) {
  }
  return node;
}

// The sink this process set, or null: a forked child does not use its parent's.
const Installed* own_sink() {
  const Installed* node = current.load(std::memory_order_acquire);
  return node != nullptr && node->owner == ::getpid() ? node : nullptr;
}

// writev until everything is written; errno is left as it was (callers may report it next).
void write_fully(iovec* iov, int count) {
  const int saved_errno = errno;
  while (count > 0) {
    ssize_t n = ::writev(STDERR_FILENO, iov, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // nowhere left to report it
    }
    auto left = static_cast<std::size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  errno = saved_errno;
}

iovec piece(std::string_view text) { return {const_cast<char*>(text.data()), text.size()}; }

std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out += part;
  return out;
}

// Prefix, parts and a newline (unless the message ends in one) in one writev.
void parts_to_stderr(Level level, std::initializer_list<std::string_view> parts) {
  constexpr std::size_t kMaxParts = 16;
  if (parts.size() > kMaxParts) {
    to_stderr(level, join(parts));
    return;
  }
  iovec iov[kMaxParts + 2];
  int count = 0;
  iov[count++] = piece(prefix(level));
  char last = '\0';
  for (std::string_view part : parts) {
    if (part.empty()) continue;
    iov[count++] = piece(part);
    last = part.back();
  }
  if (last != '\n') iov[count++] = piece("\n");
  write_fully(iov, count);
}

}  // namespace

void set_level(Level most_detailed) { threshold.store(static_cast<int>(most_detailed)); }

bool enabled(Level level) { return level == Level::error || static_cast<int>(level) <= threshold.load(); }

std::string_view prefix(Level level) {
  switch (level) {
    case Level::error: return "capsa: error: ";
    case Level::warning: return "WARNING: ";
    case Level::info: return "INFO:    ";
    case Level::verbose: return "VERBOSE: ";
    case Level::debug: return "DEBUG:   ";
  }
  return "";
}

void to_stderr(Level level, std::string_view message) { parts_to_stderr(level, {message}); }

void write(Level level, std::string_view message) {
  if (!enabled(level)) return;
  if (const Installed* node = own_sink()) {
    try {
      node->sink(level, message);
      return;
    } catch (...) {  // messages come from destructors and error paths too: never throw
    }
  }
  to_stderr(level, message);
}

void write(Level level, std::initializer_list<std::string_view> parts) {
  if (!enabled(level)) return;
  if (own_sink() == nullptr) {
    parts_to_stderr(level, parts);
    return;
  }
  std::string message;
  try {
    message = join(parts);
  } catch (...) {
    parts_to_stderr(level, parts);
    return;
  }
  write(level, message);
}

void set_sink(Sink sink) { current.store(sink ? install(std::move(sink)) : nullptr, std::memory_order_release); }

Sink current_sink() {
  if (const Installed* node = own_sink()) return node->sink;
  return to_stderr;
}

ScopedSink::ScopedSink(Sink sink)
    : replaced_(current.exchange(sink ? install(std::move(sink)) : nullptr, std::memory_order_acq_rel)) {}

ScopedSink::~ScopedSink() { current.store(static_cast<const Installed*>(replaced_), std::memory_order_release); }

}  // namespace capsa::log
