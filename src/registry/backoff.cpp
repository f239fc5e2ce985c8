#include "registry/backoff.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <thread>

namespace capsa::registry {

std::optional<std::chrono::milliseconds> retry_after(const HttpResponse& response) {
  auto value = response.header("retry-after");
  if (!value || value->empty()) return std::nullopt;
  if (std::all_of(value->begin(), value->end(), [](unsigned char c) { return std::isdigit(c); })) {
    if (value->size() > 9) return std::chrono::hours(24 * 365);  // absurd: let the limit reject it
    return std::chrono::seconds(std::stol(*value));
  }
  const time_t when = curl_getdate(value->c_str(), nullptr);
  if (when < 0) return std::nullopt;
  const time_t now = std::time(nullptr);
  return std::chrono::seconds(when > now ? when - now : 0);
}

bool is_retriable_status(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

Backoff::Backoff(const ClientOptions& options, const std::atomic<bool>* cancel)
    : options_(options), cancel_(cancel), random_(std::random_device{}()) {}

bool Backoff::wait(const std::string& reason, std::optional<std::chrono::milliseconds> wait) {
  if (retries_ >= options_.max_retries) return false;
  ++retries_;
  std::chrono::milliseconds delay;
  if (wait) {
    if (*wait > options_.max_retry_after)
      throw RegistryError(ErrorKind::kServer,
                          reason + ", and asks to retry after " +
                              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(*wait).count()) +
                              " s (Retry-After), longer than capsa waits; try again later");
    delay = *wait;
  } else {
    // Full-range jitter over the upper half keeps parallel workers from retrying in lockstep.
    const std::chrono::milliseconds ceiling =
        std::min(options_.backoff_max, options_.backoff_base * (1 << std::min(retries_ - 1, 20)));
    std::uniform_int_distribution<long long> jitter(ceiling.count() / 2, ceiling.count());
    delay = std::chrono::milliseconds(jitter(random_));
  }
  if (options_.log)
    options_.log(reason + "; retrying in " + std::to_string(delay.count()) + " ms (retry " + std::to_string(retries_) +
                 " of " + std::to_string(options_.max_retries) + ")");
  const auto until = std::chrono::steady_clock::now() + delay;
  while (std::chrono::steady_clock::now() < until) {
    if (cancel_ != nullptr && cancel_->load()) throw RegistryError(ErrorKind::kCancelled, "cancelled while waiting to retry");
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(50),
                                                                              until - std::chrono::steady_clock::now()));
  }
  return true;
}

}  // namespace capsa::registry
