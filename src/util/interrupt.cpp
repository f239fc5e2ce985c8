#include "util/interrupt.hpp"

#include <signal.h>

#include <cstring>

namespace capsa {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

extern "C" void on_interrupt(int signal_number) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal_number);  // the first signal names the cause
  g_interrupted.store(true);
}

}  // namespace

Interrupted::Interrupted(int signal_number)
    : Error("interrupted by " + signal_name(signal_number)), signal_number_(signal_number) {}

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a signal must not turn a read() or write() deep in a library into a
  // spurious EINTR error; the flag is what stops the work.
  action.sa_flags = SA_RESTART;
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal_number, &action, nullptr);
}

const std::atomic<bool>& interrupt_flag() { return g_interrupted; }

int interrupt_signal() { return g_signal.load(); }

void throw_if_interrupted() {
  if (g_interrupted.load()) throw Interrupted(g_signal.load());
}

std::string signal_name(int signal_number) {
  if (signal_number == SIGINT) return "SIGINT";
  if (signal_number == SIGTERM) return "SIGTERM";
  if (signal_number == SIGHUP) return "SIGHUP";
  const char* abbrev = ::sigabbrev_np(signal_number);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal_number);
}

}  // namespace capsa
