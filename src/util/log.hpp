#pragma once
// The one channel for messages the engine gives the user besides its results: warnings,
// notices, debugging output, and the errors of forked children that cannot throw to the
// command line. Each message goes, with its level, to a process-wide sink; the default
// writes one line to stderr with Apptainer's prefix ("WARNING: skipping ..."). The command
// line chooses how much is shown (set_level) and may replace the sink (set_sink).
//
// Safe from any thread, and in a forked child of a threaded process: a sink is used only
// in the process that set it; a child writes its messages straight to stderr, without
// locks or allocation (the sink may need a lock another thread of the parent held at the
// fork), so a child about to exec can still report why it failed.

#include <functional>
#include <initializer_list>
#include <string_view>

namespace capsa::log {

// From always shown to most detailed.
enum class Level { error, warning, info, verbose, debug };

// `message` has no prefix and no final newline.
using Sink = std::function<void(Level level, std::string_view message)>;

// Messages more detailed than `most_detailed` are dropped (errors never are). Default: info.
void set_level(Level most_detailed);
bool enabled(Level level);

void write(Level level, std::string_view message);
// The message is the parts joined: with no sink set, written without building a string
// (for a child between fork and exec).
void write(Level level, std::initializer_list<std::string_view> parts);

inline void error(std::string_view message) { write(Level::error, message); }
inline void warning(std::string_view message) { write(Level::warning, message); }
inline void info(std::string_view message) { write(Level::info, message); }
inline void verbose(std::string_view message) { write(Level::verbose, message); }
inline void debug(std::string_view message) { write(Level::debug, message); }
inline void error(std::initializer_list<std::string_view> parts) { write(Level::error, parts); }
inline void warning(std::initializer_list<std::string_view> parts) { write(Level::warning, parts); }
inline void info(std::initializer_list<std::string_view> parts) { write(Level::info, parts); }
inline void verbose(std::initializer_list<std::string_view> parts) { write(Level::verbose, parts); }
inline void debug(std::initializer_list<std::string_view> parts) { write(Level::debug, parts); }

// "capsa: error: ", "WARNING: ", "INFO:    ", "VERBOSE: ", "DEBUG:   ".
std::string_view prefix(Level level);
// The default sink: prefix, message and a newline in one write(2) to stderr, so lines
// from several threads or processes do not mix. A message that already ends in a
// newline (a multi-line block) gets no second one.
void to_stderr(Level level, std::string_view message);

// Replaces the sink for the whole process (an empty one restores to_stderr).
void set_sink(Sink sink);
// The sink now in use in this process (to_stderr when none was set).
Sink current_sink();

// Sets a sink for its lifetime and then restores the one it replaced (for a display that
// must redraw around messages). Lifetimes nest; set it up and drop it on one thread while
// no other thread writes.
class ScopedSink {
 public:
  explicit ScopedSink(Sink sink);
  ~ScopedSink();
  ScopedSink(const ScopedSink&) = delete;
  ScopedSink& operator=(const ScopedSink&) = delete;

 private:
  const void* replaced_;
};

}  // namespace capsa::log
