#pragma once
// Where capsa's FUSE server spends a request's time, for bench/read.sh. With
// CAPSA_FUSE_STATS=FILE in the environment of the capsa that mounts an image, its server
// counts each kind of request and the time its handler took, and inside the handlers the
// time spent reading the SIF and decompressing blocks, in FILE: a shared mapping updated
// with atomic adds as it goes (the server ends by a signal when its container does, with
// no chance to write a summary). Off, it costs one pointer test per request.
//
// FILE holds, for each RequestKind in order, two little-endian uint64: count, nanoseconds.
#include <cstdint>
#include <string>

namespace capsa::squashfs {

enum class RequestKind : unsigned {
  lookup,
  getattr,
  readlink,
  opendir,
  readdir,
  open,
  read,
  statfs,
  block_read,        // pread of a stored block (inside read, readdir, lookup)
  block_decompress,  // decompressing it
  count,
};

class RequestStats {
 public:
  // The counters CAPSA_FUSE_STATS names (the file created, or its counters carried on),
  // or nullptr when the variable is unset. Throws Error when the file cannot be mapped.
  static RequestStats* from_environment();
  void add(RequestKind kind, std::uint64_t nanoseconds);

 private:
  explicit RequestStats(std::uint64_t* counters) : counters_(counters) {}
  std::uint64_t* counters_;  // 2 per kind, in a shared mapping that lives as long as the process
};

// Adds the time from its construction to its end to `kind`, when `stats` is set.
class TimedRequest {
 public:
  TimedRequest(RequestStats* stats, RequestKind kind);
  ~TimedRequest();
  TimedRequest(const TimedRequest&) = delete;
  TimedRequest& operator=(const TimedRequest&) = delete;

 private:
  RequestStats* stats_;
  RequestKind kind_;
  std::uint64_t start_ = 0;
};

}  // namespace capsa::squashfs
