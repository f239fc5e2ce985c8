#include "cache/waiter.hpp"

#include <algorithm>
#include <thread>

#include "util/error.hpp"
#include "util/interrupt.hpp"

namespace capsa::cache {

void Waiter::pause() {
  throw_if_interrupted();  // Ctrl-C must not wait for another process to finish
  if (!announced_) {
    announced_ = true;
    if (options_.on_wait) options_.on_wait(key_, read_lock_holder(lock_path_));
  }
  auto waited = std::chrono::steady_clock::now() - start_;
  if (options_.timeout && waited >= *options_.timeout) {
    std::string holder = read_lock_holder(lock_path_);
    auto seconds = std::chrono::duration_cast<std::chrono::seconds>(waited).count();
    throw Error("gave up after " + std::to_string(seconds) + " s waiting for " +
                (holder.empty() ? std::string("another process") : "process " + holder) +
                " to finish with cache entry " + key_.name() + " in " + cache_root_ +
                "; if it is stuck, stop it (the entry is then produced again) or use --disable-cache");
  }
  std::this_thread::sleep_for(delay_);
  delay_ = std::min(delay_ * 2, std::chrono::milliseconds(250));
}

}  // namespace capsa::cache
