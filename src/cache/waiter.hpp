#pragma once
// Waiting for another process that holds a cache entry's lock: polls with a growing
// pause instead of a blocking F_OFD_SETLKW, because a blocking lock call cannot honour a
// timeout, and NFS servers grant blocked locks late (NLM retries every 30 s on Linux).

#include <chrono>
#include <string>

#include "cache/cache.hpp"

namespace capsa::cache {

class Waiter {
 public:
  Waiter(const Key& key, std::string lock_path, std::string cache_root, const WaitOptions& options)
      : key_(key), lock_path_(std::move(lock_path)), cache_root_(std::move(cache_root)), options_(options),
        start_(std::chrono::steady_clock::now()) {}

  // Announces the wait the first time, sleeps a little; throws once the timeout passed.
  void pause();

 private:
  const Key& key_;
  std::string lock_path_;
  std::string cache_root_;
  const WaitOptions& options_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds delay_{5};
  bool announced_ = false;
};

}  // namespace capsa::cache
