#pragma once
// Interruption by SIGINT, SIGTERM or SIGHUP turned into an orderly unwind. The default
// action of these signals ends the process on the spot, so destructors never run and
// AtomicFile temporaries (next to an output, in the cache's tmp/) would stay behind. With
// the handlers installed a signal only sets a flag; long-running loops poll it and throw
// Interrupted, every RAII owner cleans up on the way out, and the command exits with
// 128 + the signal number as a shell expects. (SIGKILL cannot be caught: see docs/pull.md.)

#include <atomic>
#include <string>

#include "util/error.hpp"

namespace capsa {

class Interrupted : public Error {
 public:
  explicit Interrupted(int signal_number);
  int signal_number() const { return signal_number_; }

 private:
  int signal_number_;
};

// Installs the flag-setting handlers for SIGINT, SIGTERM and SIGHUP, process-wide.
void install_interrupt_handlers();

// Set once one of the signals arrived; safe to poll from any thread.
const std::atomic<bool>& interrupt_flag();

// The signal that arrived, 0 if none.
int interrupt_signal();

// Throws Interrupted if a signal arrived.
void throw_if_interrupted();

// "SIGINT", "SIGTERM", ...
std::string signal_name(int signal_number);

}  // namespace capsa
