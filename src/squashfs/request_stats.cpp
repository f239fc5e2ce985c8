#include "squashfs/request_stats.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::squashfs {
namespace {

constexpr std::size_t kBytes = 2 * static_cast<std::size_t>(RequestKind::count) * sizeof(std::uint64_t);

std::uint64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(t.tv_nsec);
}

}  // namespace

RequestStats* RequestStats::from_environment() {
  const char* path = std::getenv("CAPSA_FUSE_STATS");
  if (path == nullptr || *path == '\0') return nullptr;
  UniqueFd file = open_file(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (::ftruncate(file.get(), kBytes) != 0) throw_errno(std::string("CAPSA_FUSE_STATS: ") + path);
  void* mapped = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, file.get(), 0);
  if (mapped == MAP_FAILED) throw_errno(std::string("CAPSA_FUSE_STATS: mapping ") + path);
  return new RequestStats(static_cast<std::uint64_t*>(mapped));  // lives as long as the process
}

void RequestStats::add(RequestKind kind, std::uint64_t nanoseconds) {
  const auto i = 2 * static_cast<std::size_t>(kind);
  std::atomic_ref<std::uint64_t>(counters_[i]).fetch_add(1, std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(counters_[i + 1]).fetch_add(nanoseconds, std::memory_order_relaxed);
}

TimedRequest::TimedRequest(RequestStats* stats, RequestKind kind) : stats_(stats), kind_(kind) {
  if (stats_ != nullptr) start_ = now_ns();
}

TimedRequest::~TimedRequest() {
  if (stats_ != nullptr) stats_->add(kind_, now_ns() - start_);
}

}  // namespace capsa::squashfs
