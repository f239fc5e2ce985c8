#define FUSE_USE_VERSION 312
#include "squashfs/request_threads.hpp"

#include <fuse3/fuse_lowlevel.h>
#include <poll.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "util/detached_child.hpp"

namespace capsa::squashfs {
namespace {

[[noreturn]] void end_now(int end_lock) {
  if (end_lock >= 0) ::flock(end_lock, LOCK_UN);
  ::_exit(0);
}

// Ends the process once `container` has ended, from a thread of its own.
void exit_with(const EndWatch& container, int end_lock) {
  std::thread([&container, end_lock] {
    container.await();
    end_now(end_lock);
  }).detach();
}

// Waits for the first request (true), or the container's end (false).
bool first_request_before_end(fuse_session* session, const EndWatch& container) {
  pollfd fds[2] = {{fuse_session_fd(session), POLLIN, 0}, {container.poll_fd(), POLLIN, 0}};
  while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
  }
  return (fds[1].revents & POLLIN) == 0;
}

class RequestThreads {
 public:
  RequestThreads(fuse_session* session, unsigned max_threads, int end_lock)
      : session_(session), max_threads_(max_threads), end_lock_(end_lock) {}

  // The loop of every thread. The caller's thread runs it first, with the container to
  // watch: the thread that does is started after the first request is answered, not
  // before (it would delay that answer, which a container's start waits for).
  void serve(const EndWatch* container = nullptr) {
    fuse_buf buffer{};
    for (;;) {
      idle_.fetch_add(1);
      const int got = fuse_session_receive_buf(session_, &buffer);
      const bool every_thread_busy = idle_.fetch_sub(1) == 1;
      if (got == -EINTR || got == -EAGAIN) continue;
      if (got <= 0) break;  // 0 after ENODEV: the connection has ended
      fuse_session_process_buf(session_, &buffer);
      if (container != nullptr) exit_with(*std::exchange(container, nullptr), end_lock_);
      if (every_thread_busy) start_another();
      if (fuse_session_exited(session_)) break;
    }
    std::free(buffer.mem);
  }

  void join_the_others() {
    for (;;) {
      std::vector<std::thread> started;
      {
        std::lock_guard lock(mutex_);
        ended_ = true;  // no thread starts after this
        started.swap(started_);
      }
      if (started.empty()) return;
      for (std::thread& thread : started) thread.join();
    }
  }

 private:
  void start_another() {
    std::lock_guard lock(mutex_);
    if (ended_ || threads_ >= max_threads_) return;
    ++threads_;
    started_.emplace_back([this] { serve(); });
  }

  fuse_session* const session_;
  const unsigned max_threads_;
  const int end_lock_;
  std::atomic<unsigned> idle_{0};  // threads waiting in read(2) for a request
  std::mutex mutex_;               // guards what follows
  unsigned threads_ = 1;           // the caller's included
  bool ended_ = false;
  std::vector<std::thread> started_;
};

}  // namespace

void answer_requests(fuse_session* session, unsigned max_threads, const EndWatch& container, int end_lock) {
  const EndWatch* watch_after_first_answer = &container;
  if (container.poll_fd() < 0) {
    // No pidfd (a kernel before 5.3): the thread polls /proc from the start.
    exit_with(container, end_lock);
    watch_after_first_answer = nullptr;
  } else if (!first_request_before_end(session, container)) {
    end_now(end_lock);
  }
  RequestThreads threads(session, max_threads, end_lock);
  threads.serve(watch_after_first_answer);
  threads.join_the_others();
}

}  // namespace capsa::squashfs
