// FUSE over io_uring for a libfuse 3.14 session: one ring and one thread per CPU
// (see fuse_uring.hpp for why and how it fits libfuse).
#define FUSE_USE_VERSION 312
#include "ext3/fuse_uring.hpp"

#include <fuse3/fuse_lowlevel.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <string_view>
#include <thread>

#include "util/log.hpp"

namespace capsa::ext3 {
namespace {

// The kernel's FUSE-over-io_uring interface (protocol 7.42, include/uapi/linux/fuse.h);
// Debian 12's linux-libc-dev (6.1) predates it, so its few definitions are here.
constexpr std::uint64_t kFuseOverIoUring = 1ULL << 41;  // an INIT flag, in flags2
constexpr std::uint32_t kRegister = 1;                  // fuse_uring_cmd
constexpr std::uint32_t kCommitAndFetch = 2;
struct RingEntryInOut {  // fuse_uring_ent_in_out
  std::uint64_t flags;
  std::uint64_t commit_id;
  std::uint32_t payload_sz;
  std::uint32_t padding;
  std::uint64_t reserved;
};
struct RingHeaders {  // fuse_uring_req_header
  char in_out[128];   // fuse_in_header in, fuse_out_header back
  char op_in[128];    // the request's first argument (its per-operation header)
  RingEntryInOut ring_ent_in_out;
};
struct RingCommand {  // fuse_uring_cmd_req, in the SQE's command area
  std::uint64_t flags;
  std::uint64_t commit_id;
  std::uint16_t qid;
  std::uint8_t padding[6];
};
static_assert(sizeof(RingHeaders) == 288 && sizeof(RingCommand) == 24);

// Entries per CPU: a second lets the kernel hand over the next request while one is
// answered (background reads and releases beside a caller's own request).
constexpr unsigned kEntriesPerQueue = 2;
constexpr unsigned kRingDepth = 8;  // the entries, the stop poll, and room to spare
// Room before each payload where the request is rebuilt as /dev/fuse would give it:
// fuse_in_header, then the per-operation header, then the payload, all contiguous.
constexpr std::size_t kRequestRoom = 256;

}  // namespace

// One registered request buffer: the kernel writes a request into it and reads the reply
// back from it. Never moved once registered (the kernel keeps the addresses).
struct RingEntry {
  explicit RingEntry(std::size_t capacity) : block(new char[kRequestRoom + capacity]), payload_capacity(capacity) {
    iov[0] = {&headers, sizeof headers};
    iov[1] = {payload(), payload_capacity};
  }
  char* payload() const { return block.get() + kRequestRoom; }

  RingHeaders headers{};
  std::unique_ptr<char[]> block;
  std::size_t payload_capacity;
  iovec iov[2];
  bool answered_once = false;
};

namespace {

// Where the reply hook puts the reply of the ring request being answered on this thread.
struct RingReply {
  RingEntry* entry;
  bool given = false;
};
thread_local RingReply* t_ring_reply = nullptr;
// Set while the session's thread answers an INIT that may accept io_uring.
thread_local FuseUring* t_init_accepting = nullptr;

ssize_t put_ring_reply(RingReply& reply, const iovec* iov, int count) {
  RingEntry& entry = *reply.entry;
  if (count < 1 || iov[0].iov_len != sizeof(fuse_out_header)) {
    errno = EINVAL;
    return -1;
  }
  std::size_t body = 0;
  for (int i = 1; i < count; ++i) {
    if (iov[i].iov_len > entry.payload_capacity - body) {
      errno = EMSGSIZE;  // no reply: answer() sends EIO instead
      return -1;
    }
    std::memmove(entry.payload() + body, iov[i].iov_base, iov[i].iov_len);
    body += iov[i].iov_len;
  }
  std::memcpy(entry.headers.in_out, iov[0].iov_base, sizeof(fuse_out_header));
  entry.headers.ring_ent_in_out.payload_sz = static_cast<std::uint32_t>(body);
  reply.given = true;
  return static_cast<ssize_t>(sizeof(fuse_out_header) + body);
}

// libfuse's I/O hooks (fuse_session_custom_io): every reply of the session passes here.
ssize_t write_reply(int fd, iovec* iov, int count, void*) {
  if (t_ring_reply != nullptr) return put_ring_reply(*t_ring_reply, iov, count);
  if (t_init_accepting != nullptr && count >= 2 && iov[0].iov_len == sizeof(fuse_out_header) &&
      static_cast<const fuse_out_header*>(iov[0].iov_base)->error == 0)
    t_init_accepting->accept_in_init_reply(iov[1].iov_base, iov[1].iov_len);
  return ::writev(fd, iov, count);
}

ssize_t read_request(int fd, void* buffer, std::size_t size, void*) { return ::read(fd, buffer, size); }

// Whether `request` is an INIT whose kernel offers io_uring (enable_uring is on).
bool offers_io_uring(const fuse_buf& request) {
  const std::size_t needed = sizeof(fuse_in_header) + offsetof(fuse_init_in, flags2) + sizeof(std::uint32_t);
  if (request.size < needed) return false;
  const auto* in = static_cast<const fuse_in_header*>(request.mem);
  if (in->opcode != FUSE_INIT) return false;
  fuse_init_in init{};
  std::memcpy(&init, static_cast<const char*>(request.mem) + sizeof *in, needed - sizeof *in);
  return (init.flags & FUSE_INIT_EXT) != 0 && (init.flags2 & (kFuseOverIoUring >> 32)) != 0;
}

// The kernel makes one queue per possible CPU and uses the rings only once each has an
// entry, so a count too low would hold every request back forever: read from the list the
// kernel counts ("0-3", "0-3,8-11"), not sysconf (older glibc counts the CPUs present).
// 0 when it cannot be read: no rings then.
unsigned possible_cpus() {
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string ranges;
  if (!std::getline(in, ranges)) return 0;
  unsigned count = 0;
  std::size_t at = 0;
  try {
    while (at < ranges.size()) {
      const std::size_t comma = std::min(ranges.find(',', at), ranges.size());
      const std::string range = ranges.substr(at, comma - at);
      const std::size_t dash = range.find('-');
      const unsigned long first = std::stoul(range.substr(0, dash));
      const unsigned long last = dash == std::string::npos ? first : std::stoul(range.substr(dash + 1));
      if (last < first) return 0;
      count += static_cast<unsigned>(last - first + 1);
      at = comma + 1;
    }
  } catch (const std::exception&) {  // not a CPU list
    return 0;
  }
  return count;
}

// Ends the whole service rather than leave the container's calls waiting for a ring that
// no longer answers: the connection aborts and they get errors.
void end_service(std::string_view why, int error) {
  log::error({"ext3 FUSE server: ", why, ": ", std::strerror(error)});
  ::kill(::getpid(), SIGTERM);
}

// A free SQE. The ring has room for every entry's command and the stop poll at once, so
// there is one, after a submit at worst; without one the server cannot go on.
io_uring_sqe* free_sqe(io_uring& ring) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr && io_uring_submit(&ring) >= 0) sqe = io_uring_get_sqe(&ring);
  if (sqe == nullptr) std::abort();  // the connection aborts: callers get errors, not a hang
  return sqe;
}

void prepare_command(io_uring& ring, int fuse_fd, std::uint32_t op, std::uint16_t qid, std::uint64_t commit_id,
                     RingEntry* entry) {
  io_uring_sqe* sqe = free_sqe(ring);
  std::memset(sqe, 0, 128);  // an SQE128: the command area must be zero past the command
  const bool registering = op == kRegister;
  io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fuse_fd, registering ? entry->iov : nullptr, registering ? 2 : 0, 0);
  sqe->cmd_op = op;
  RingCommand command{};
  command.qid = qid;
  command.commit_id = commit_id;
  std::memcpy(sqe->cmd, &command, sizeof command);
  io_uring_sqe_set_data(sqe, entry);
}

}  // namespace

struct FuseUring::Queue {
  enum class Phase { starting, ready, failed, go, stop };

  Queue(FuseUring& of, std::uint16_t index) : owner(of), qid(index) {}

  void start() {
    thread = std::thread([this] { run(); });
  }
  void set(Phase next) {
    {
      std::lock_guard lock(mutex);
      if (phase == Phase::stop) return;
      phase = next;
    }
    changed.notify_all();
  }
  Phase await_change_from(Phase current) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return phase != current; });
    return phase;
  }

  void run();
  bool make_ring();
  void register_entries();
  void answer(RingEntry& entry);

  FuseUring& owner;
  const std::uint16_t qid;
  std::thread thread;
  io_uring ring{};
  std::vector<std::unique_ptr<RingEntry>> entries;  // allocated by the session's thread
  std::mutex mutex;
  std::condition_variable changed;
  Phase phase = Phase::starting;
};

// The thread is not pinned to its queue's CPU. Pinned, it made things worse: when it
// woke the caller with a reply, the caller's CPU was busy (with this thread), so the
// scheduler moved the caller to the other, idle CPU, and every request migrated it (a
// 20,000-file unpack: 12.5 s pinned against 5.7-7.4 s unpinned, halt polling off; 4.3-4.6
// against 3.5-3.8 s with it, docs/performance.md).
bool FuseUring::Queue::make_ring() {
  io_uring_params params{};
  // Completions are delivered when this thread waits for them, not by interrupting it.
  params.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int made = io_uring_queue_init_params(kRingDepth, &ring, &params);
  if (made == -EINVAL) {
    params = {};
    params.flags = IORING_SETUP_SQE128;
    made = io_uring_queue_init_params(kRingDepth, &ring, &params);
  }
  if (made < 0) log::debug({"ext3 FUSE server: no io_uring (", std::strerror(-made), "): serving through /dev/fuse"});
  return made == 0;
}

void FuseUring::Queue::register_entries() {
  io_uring_sqe* sqe = free_sqe(ring);
  io_uring_prep_poll_add(sqe, owner.stop_fd_, POLLIN);
  io_uring_sqe_set_data(sqe, nullptr);
  for (auto& entry : entries) prepare_command(ring, owner.fuse_fd_, kRegister, qid, 0, entry.get());
}

// Rebuilds the request in front of its payload, has libfuse answer it, and queues the
// commit of the reply (which also asks for this entry's next request).
void FuseUring::Queue::answer(RingEntry& entry) {
  fuse_in_header in{};
  std::memcpy(&in, entry.headers.in_out, sizeof in);
  const std::size_t payload = entry.headers.ring_ent_in_out.payload_sz;
  const std::uint64_t commit_id = entry.headers.ring_ent_in_out.commit_id;
  RingReply reply{&entry};
  if (in.len >= sizeof in + payload && in.len - sizeof in - payload <= sizeof entry.headers.op_in &&
      payload <= entry.payload_capacity) {
    const std::size_t op_header = in.len - sizeof in - payload;
    char* start = entry.payload() - op_header - sizeof in;
    std::memcpy(start, &in, sizeof in);
    std::memcpy(start + sizeof in, entry.headers.op_in, op_header);
    fuse_buf request{};
    request.mem = start;
    request.size = in.len;
    std::lock_guard lock(owner.serving_);
    t_ring_reply = &reply;
    fuse_session_process_buf(owner.session_, &request);
    t_ring_reply = nullptr;
  }
  if (!reply.given) {
    const fuse_out_header failed{sizeof(fuse_out_header), -EIO, in.unique};
    std::memcpy(entry.headers.in_out, &failed, sizeof failed);
    entry.headers.ring_ent_in_out.payload_sz = 0;
  }
  entry.answered_once = true;
  owner.answered_.fetch_add(1, std::memory_order_relaxed);
  prepare_command(ring, owner.fuse_fd_, kCommitAndFetch, qid, commit_id, &entry);
}

void FuseUring::Queue::run() {
  const bool made = make_ring();
  set(made ? Phase::ready : Phase::failed);
  if (!made) return;
  if (await_change_from(Phase::ready) == Phase::go) {
    register_entries();
    bool serving = true;
    while (serving) {
      const int submitted = io_uring_submit_and_wait(&ring, 1);
      if (submitted < 0 && submitted != -EINTR) {
        end_service("io_uring failed", -submitted);
        break;
      }
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0, seen = 0;
      io_uring_for_each_cqe(&ring, head, cqe) {
        ++seen;
        auto* entry = static_cast<RingEntry*>(io_uring_cqe_get_data(cqe));
        if (entry == nullptr) {  // the stop poll
          serving = false;
        } else if (cqe->res == 0) {
          if (serving) answer(*entry);
        } else {
          serving = false;
          const int error = -cqe->res;
          if (!entry->answered_once && error != ENOTCONN && error != ECONNABORTED) {
            // The kernel refused the ring (and serves through /dev/fuse from now on).
            log::debug({"ext3 FUSE server: io_uring queue refused: ", std::strerror(error)});
          } else if (error != ENOTCONN && error != ECONNABORTED) {
            end_service("io_uring request failed", error);
          }
        }
      }
      io_uring_cq_advance(&ring, seen);
    }
  }
  io_uring_queue_exit(&ring);
}

FuseUring::FuseUring(fuse_session* session, int fuse_fd, std::mutex& serving, bool wanted)
    : session_(session), fuse_fd_(fuse_fd), serving_(serving), wanted_(wanted) {
  fuse_custom_io io{};
  io.writev = write_reply;
  io.read = read_request;
  fuse_session_custom_io(session_, &io, fuse_fd_);
}

FuseUring::~FuseUring() { stop(); }

bool FuseUring::set_up_rings() {
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) return false;
  const unsigned cpus = possible_cpus();
  bool all_ready = cpus > 0;
  try {
    for (unsigned qid = 0; all_ready && qid < cpus; ++qid) {
      queues_.push_back(std::make_unique<Queue>(*this, static_cast<std::uint16_t>(qid)));
      queues_.back()->start();
    }
  } catch (const std::exception&) {  // no thread or no memory: no rings
    all_ready = false;
  }
  for (auto& queue : queues_)
    if (queue->await_change_from(Queue::Phase::starting) != Queue::Phase::ready) all_ready = false;
  if (!all_ready) stop();
  return all_ready;
}

void FuseUring::accept_in_init_reply(void* init_out, std::size_t size) {
  if (size < offsetof(fuse_init_out, flags2) + sizeof(std::uint32_t)) return;
  fuse_init_out out{};
  std::memcpy(&out, init_out, std::min(size, sizeof out));
  // The kernel's bound for a ring payload: the largest write, or as many pages as a
  // request may carry (32 unless the reply sets max_pages).
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t pages = (out.flags & FUSE_MAX_PAGES) != 0 ? std::max<std::size_t>(out.max_pages, 1) : 32;
  const std::size_t payload = std::max({std::size_t{8192}, std::size_t{out.max_write}, pages * page});
  try {
    for (auto& queue : queues_)
      for (unsigned i = 0; i < kEntriesPerQueue; ++i) queue->entries.push_back(std::make_unique<RingEntry>(payload));
  } catch (const std::bad_alloc&) {
    for (auto& queue : queues_) queue->entries.clear();
    return;
  }
  out.flags |= FUSE_INIT_EXT;
  out.flags2 |= static_cast<std::uint32_t>(kFuseOverIoUring >> 32);
  std::memcpy(init_out, &out, std::min(size, sizeof out));
  accepted_ = true;
}

void FuseUring::process_from_device(const fuse_buf& request) {
  const bool offering = wanted_ && queues_.empty() && offers_io_uring(request) && set_up_rings();
  {
    std::lock_guard lock(serving_);
    t_init_accepting = offering ? this : nullptr;
    fuse_session_process_buf(session_, &request);
    t_init_accepting = nullptr;
  }
  if (!offering) return;
  if (!accepted_) {
    stop();
    return;
  }
  log::debug({"ext3 FUSE server: answering through io_uring, ", std::to_string(queues_.size()), " queues"});
  for (auto& queue : queues_) queue->set(Queue::Phase::go);
}

// Idempotent: the threads are joined once, the eventfd closed once.
void FuseUring::stop() {
  if (stop_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t written = ::write(stop_fd_, &one, sizeof one);
  }
  for (auto& queue : queues_) {
    queue->set(Queue::Phase::stop);
    if (queue->thread.joinable()) queue->thread.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
  stop_fd_ = -1;
}

}  // namespace capsa::ext3
