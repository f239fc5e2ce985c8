#pragma once
// FUSE over io_uring for a libfuse low-level session (Linux 6.14 and later, where the
// administrator turned it on: /sys/module/fuse/parameters/enable_uring). The kernel then
// queues each request on the ring of the CPU its caller runs on, one server thread per
// ring, and hands requests over and replies back without a read(2) and a write(2) on
// /dev/fuse each. On a VM whose idle vCPUs halt at once, an unprivileged unpack of 20,000
// files into an ext3 overlay took 15.5 s through /dev/fuse and 5.8 s through the rings;
// reading them back 2.3 s and 2.6 s (docs/performance.md, "Persistent overlays").
//
// Debian 12's libfuse (3.14) has no client for this protocol, so this one feeds libfuse's
// own request decoding (fuse_session_process_buf) with what the rings bring and catches
// the replies through libfuse's custom I/O hook (fuse_session_custom_io): the request
// handlers are the same both ways. FORGET and INTERRUPT still come through /dev/fuse, read
// by the session's loop, which hands every request it reads to process_from_device. INIT
// is one of them: its reply accepts io_uring only once every CPU's ring was set up and
// every entry's buffers allocated, because from then on the kernel holds every request
// back until each CPU's queue has an entry registered.
//
// Handlers run one at a time, under `serving`: the file system below (libext2fs) is not
// thread-safe, and the loop over /dev/fuse takes the same lock.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

struct fuse_session;
struct fuse_buf;

namespace capsa::ext3 {

class FuseUring {
 public:
  // Takes over `session`'s I/O on `fuse_fd` (the session is mounted on it already). With
  // `wanted` false the rings are never offered to the kernel (CAPSA_FUSE_URING=0).
  FuseUring(fuse_session* session, int fuse_fd, std::mutex& serving, bool wanted);
  ~FuseUring();
  FuseUring(const FuseUring&) = delete;
  FuseUring& operator=(const FuseUring&) = delete;

  // Hands `request`, read from /dev/fuse, to libfuse under `serving`; an INIT that offers
  // io_uring sets up the rings first, and once it is answered they register.
  void process_from_device(const fuse_buf& request);

  // Ends the ring threads and waits for them. Safe to call again.
  void stop();

  // For the server's debugging line: the rings in use (0: none) and what they answered.
  std::size_t queues_in_use() const { return accepted_ ? queues_.size() : 0; }
  std::uint64_t answered_through_rings() const { return answered_.load(); }

  struct Queue;  // one CPU's ring and thread (fuse_uring.cpp)

  // Called by the reply hook while INIT is answered: allocates the entries for the payload
  // size the reply sets and marks the reply as accepting io_uring (fuse_init_out fields).
  void accept_in_init_reply(void* init_out, std::size_t size);

 private:
  bool set_up_rings();

  fuse_session* session_;
  int fuse_fd_;
  std::mutex& serving_;
  bool wanted_;
  bool accepted_ = false;
  int stop_fd_ = -1;  // an eventfd every ring polls: written once to end them all
  std::vector<std::unique_ptr<Queue>> queues_;
  std::atomic<std::uint64_t> answered_{0};
};

}  // namespace capsa::ext3
