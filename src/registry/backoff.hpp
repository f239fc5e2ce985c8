#pragma once
// Waiting between attempts: exponential backoff with jitter, or the registry's Retry-After
// when it sent one (429/503). The wait is cut short by cancellation.

#include <atomic>
#include <chrono>
#include <optional>
#include <random>
#include <string>

#include "registry/http.hpp"
#include "registry/options.hpp"

namespace capsa::registry {

// Retry-After as delta-seconds or HTTP-date; nullopt when absent or unreadable.
std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& response);

// 429 and the 5xx statuses a proxy or overloaded registry gives for transient trouble.
bool is_retriable_status(long status);

class Backoff {
 public:
  Backoff(const ClientOptions& options, const std::atomic<bool>* cancel);
  // Sleeps before the next attempt and logs why. False when the attempts are used up.
  // Throws RegistryError when `wait` (Retry-After) exceeds options.max_retry_after, and
  // kCancelled when cancelled while waiting.
  bool wait(const std::string& reason, std::optional<std::chrono::milliseconds> wait = std::nullopt);
  int attempts_made() const { return retries_ + 1; }

 private:
  const ClientOptions& options_;
  const std::atomic<bool>* cancel_;
  int retries_ = 0;
  std::mt19937 random_;
};

}  // namespace capsa::registry
