// libfuse3 low-level request handlers over ext3::Volume, and the server's loop (see
// fuse_server.hpp for why: fuse2fs resolves a path per request and lacks the d_type and
// RENAME_WHITEOUT that the kernel's overlayfs needs from a FUSE upper layer).
#define FUSE_USE_VERSION 312
#include "ext3/fuse_server.hpp"

#include <fuse3/fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "ext3/fuse_uring.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::ext3 {
namespace {

// The server is the only writer of the file system: the kernel may keep names and
// attributes until it forgets them.
constexpr double kCacheTimeout = 365.0 * 24 * 3600;

// What the handlers share: the volume, and whether the kernel opens and closes files
// without asking (FUSE's no_open, set by op_init).
struct Served {
  Volume& volume;
  bool kernel_opens_files = false;
};

Served& served_of(fuse_req_t req) { return *static_cast<Served*>(fuse_req_userdata(req)); }
Volume& volume_of(fuse_req_t req) { return served_of(req).volume; }

// The kernel's node 1 is the root; every other node id is the inode number (inode 1,
// the bad-blocks inode, is never shown).
Ino ino_of(fuse_ino_t node) { return node == FUSE_ROOT_ID ? kRootIno : static_cast<Ino>(node); }
fuse_ino_t node_of(Ino ino) { return ino == kRootIno ? FUSE_ROOT_ID : ino; }

Caller caller_of(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  return {ctx->uid, ctx->gid};
}

// Runs a request handler, turning a failure into an error reply.
template <typename Body>
void answer(fuse_req_t req, Body&& body) {
  try {
    body(volume_of(req));
  } catch (const Errno& e) {
    fuse_reply_err(req, e.value);
  } catch (const std::bad_alloc&) {
    fuse_reply_err(req, ENOMEM);
  } catch (const std::exception&) {
    fuse_reply_err(req, EIO);
  }
}

// What the kernel is told of a node it looks up or creates.
fuse_entry_param entry_of(Volume& volume, Ino ino) {
  fuse_entry_param e{};
  e.ino = node_of(ino);
  e.generation = volume.generation(ino);
  e.attr = volume.attributes(ino);
  e.attr.st_ino = e.ino;
  e.attr_timeout = kCacheTimeout;
  e.entry_timeout = kCacheTimeout;
  return e;
}

// The entry of a node the kernel now knows once more (its lookup count goes up).
void reply_entry(fuse_req_t req, Volume& volume, Ino ino) {
  const fuse_entry_param e = entry_of(volume, ino);
  if (fuse_reply_entry(req, &e) == 0) volume.remember(ino);
}

void reply_attr(fuse_req_t req, Volume& volume, Ino ino) {
  struct stat st = volume.attributes(ino);
  st.st_ino = node_of(ino);
  fuse_reply_attr(req, &st, kCacheTimeout);
}

void op_init(void* userdata, fuse_conn_info* conn) {
  auto* served = static_cast<Served*>(userdata);
  // No writeback cache: measured with bench/overlay.sh's tar of 20,000 small files it
  // saved nothing (each file is one write either way), and it holds writes in the
  // kernel until a close or fsync: a full file system then fails the close, which
  // fuse-overlayfs (where the kernel refuses overlayfs) does not pass on, so the writer
  // never learns of ENOSPC; and what the kernel holds when the server must end is lost.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  // On a read-only volume files are opened and closed without asking the server (the
  // first OPEN answers ENOSYS), two round trips fewer a file: bench/overlay.sh's read-back
  // of 20,000 small files through `--overlay IMG:ro` took 0.96 s instead of 1.19. Not on a
  // writable one: the server would then learn that a removed file is no longer open only
  // from the kernel's FORGET, which the kernel sends after the requests already queued,
  // so the space of `rm big` did not come back in time for the next write (ENOSPC in 1
  // run in 5 of the full-file-system test under load).
  served->kernel_opens_files = (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) != 0 && !served->volume.writable();
  if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
  conn->want &= ~FUSE_CAP_POSIX_ACL;
  conn->time_gran = 1;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  answer(req, [&](Volume& volume) {
    const Ino ino = volume.find(ino_of(parent), name);
    if (ino == 0) {
      // A negative entry the kernel may keep: names only appear through this server.
      fuse_entry_param none{};
      none.entry_timeout = kCacheTimeout;
      fuse_reply_entry(req, &none);
      return;
    }
    reply_entry(req, volume, ino);
  });
}

void op_forget(fuse_req_t req, fuse_ino_t node, uint64_t count) {
  try {
    volume_of(req).forget(ino_of(node), count);
  } catch (...) {
    // An inode that could not be freed now is freed when the file system closes.
  }
  fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) {
    try {
      volume_of(req).forget(ino_of(forgets[i].ino), forgets[i].nlookup);
    } catch (...) {
      // As in op_forget.
    }
  }
  fuse_reply_none(req);
}

void op_getattr(fuse_req_t req, fuse_ino_t node, fuse_file_info*) {
  answer(req, [&](Volume& volume) { reply_attr(req, volume, ino_of(node)); });
}

void op_setattr(fuse_req_t req, fuse_ino_t node, struct stat* attr, int to_set, fuse_file_info*) {
  answer(req, [&](Volume& volume) {
    Volume::Change c;
    c.mode = (to_set & FUSE_SET_ATTR_MODE) != 0;
    c.new_mode = attr->st_mode;
    c.uid = (to_set & FUSE_SET_ATTR_UID) != 0;
    c.new_uid = attr->st_uid;
    c.gid = (to_set & FUSE_SET_ATTR_GID) != 0;
    c.new_gid = attr->st_gid;
    c.size = (to_set & FUSE_SET_ATTR_SIZE) != 0;
    c.new_size = static_cast<std::uint64_t>(attr->st_size);
    c.atime = (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) != 0;
    c.new_atime = attr->st_atim;
    if (to_set & FUSE_SET_ATTR_ATIME_NOW) c.new_atime.tv_nsec = UTIME_NOW;
    c.mtime = (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) != 0;
    c.new_mtime = attr->st_mtim;
    if (to_set & FUSE_SET_ATTR_MTIME_NOW) c.new_mtime.tv_nsec = UTIME_NOW;
    c.ctime = (to_set & FUSE_SET_ATTR_CTIME) != 0;
    c.new_ctime = attr->st_ctim;
    volume.change(ino_of(node), c);
    reply_attr(req, volume, ino_of(node));
  });
}

void op_readlink(fuse_req_t req, fuse_ino_t node) {
  answer(req, [&](Volume& volume) { fuse_reply_readlink(req, volume.read_link(ino_of(node)).c_str()); });
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  answer(req, [&](Volume& volume) {
    reply_entry(req, volume, volume.make_node(ino_of(parent), name, mode, rdev, caller_of(req)));
  });
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  answer(req, [&](Volume& volume) {
    reply_entry(req, volume, volume.make_directory(ino_of(parent), name, mode, caller_of(req)));
  });
}

void op_symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  answer(req, [&](Volume& volume) {
    reply_entry(req, volume, volume.make_symlink(ino_of(parent), name, target, caller_of(req)));
  });
}

void op_link(fuse_req_t req, fuse_ino_t node, fuse_ino_t parent, const char* name) {
  answer(req, [&](Volume& volume) {
    volume.link(ino_of(node), ino_of(parent), name);
    reply_entry(req, volume, ino_of(node));
  });
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  answer(req, [&](Volume& volume) {
    volume.unlink(ino_of(parent), name);
    fuse_reply_err(req, 0);
  });
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  answer(req, [&](Volume& volume) {
    volume.remove_directory(ino_of(parent), name);
    fuse_reply_err(req, 0);
  });
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent, const char* new_name,
               unsigned flags) {
  answer(req, [&](Volume& volume) {
    volume.rename(ino_of(parent), name, ino_of(new_parent), new_name, flags, caller_of(req));
    fuse_reply_err(req, 0);
  });
}

// Files keep no state of their own beyond a count of opens, and none once the kernel
// opens them itself: every read and write names the inode (the kernel's writeback may
// use any open file, or none that was opened for writing).
void op_open(fuse_req_t req, fuse_ino_t node, fuse_file_info* fi) {
  answer(req, [&](Volume& volume) {
    // A success: the kernel opens files itself from now on (only on a read-only volume,
    // whose mount refuses opens for writing).
    if (served_of(req).kernel_opens_files) throw Errno{ENOSYS};
    if ((fi->flags & O_ACCMODE) != O_RDONLY && !volume.writable()) throw Errno{EROFS};
    if (S_ISDIR(volume.attributes(ino_of(node)).st_mode)) throw Errno{EISDIR};
    fi->keep_cache = 1;  // nothing else changes the file: what the kernel cached stays true
    if (fuse_reply_open(req, fi) == 0) volume.opened(ino_of(node));
  });
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi) {
  answer(req, [&](Volume& volume) {
    const Ino ino = volume.make_node(ino_of(parent), name, S_IFREG | (mode & 07777), 0, caller_of(req));
    const fuse_entry_param e = entry_of(volume, ino);
    fi->keep_cache = 1;
    if (fuse_reply_create(req, &e, fi) == 0) {
      volume.remember(ino);
      volume.opened(ino);
    }
  });
}

void op_read(fuse_req_t req, fuse_ino_t node, size_t size, off_t offset, fuse_file_info*) {
  answer(req, [&](Volume& volume) {
    std::vector<char> buffer(size);
    std::size_t got = volume.read(ino_of(node), static_cast<std::uint64_t>(offset), buffer.data(), size);
    fuse_reply_buf(req, buffer.data(), got);
  });
}

void op_write(fuse_req_t req, fuse_ino_t node, const char* data, size_t size, off_t offset, fuse_file_info*) {
  answer(req, [&](Volume& volume) {
    fuse_reply_write(req, volume.write(ino_of(node), static_cast<std::uint64_t>(offset), data, size));
  });
}

// No flush: data reaches the image file as it is written, so close has nothing to add,
// and without the operation the kernel stops sending FLUSH on every close.
void op_release(fuse_req_t req, fuse_ino_t node, fuse_file_info*) {
  try {
    volume_of(req).closed(ino_of(node));
  } catch (...) {
    // The blocks of a removed file are freed when the kernel forgets it, or at the end.
  }
  fuse_reply_err(req, 0);
}

// fsync writes back the bitmaps and super block too, and syncs the image file.
void op_fsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
  answer(req, [&](Volume& volume) {
    volume.flush();
    fuse_reply_err(req, 0);
  });
}

// A directory's entries are read once per pass (opendir, or a rewind to offset 0), so
// that removing entries while reading (rm -r) skips none.
struct Listing {
  std::vector<DirEntry> entries;
};

void op_opendir(fuse_req_t req, fuse_ino_t node, fuse_file_info* fi) {
  answer(req, [&](Volume& volume) {
    auto listing = std::make_unique<Listing>();
    listing->entries = volume.list(ino_of(node));
    fi->fh = reinterpret_cast<std::uint64_t>(listing.get());
    if (fuse_reply_open(req, fi) == 0) static_cast<void>(listing.release());  // releasedir deletes it
  });
}

void op_readdir(fuse_req_t req, fuse_ino_t node, size_t size, off_t offset, fuse_file_info* fi) {
  answer(req, [&](Volume& volume) {
    auto* listing = reinterpret_cast<Listing*>(fi->fh);
    if (offset == 0) listing->entries = volume.list(ino_of(node));
    std::vector<char> buffer(size);
    std::size_t used = 0;
    for (auto next = static_cast<std::size_t>(std::max<off_t>(offset, 0)); next < listing->entries.size(); ++next) {
      const DirEntry& entry = listing->entries[next];
      struct stat st {};
      st.st_ino = node_of(entry.ino);
      st.st_mode = entry.type;  // d_type: overlayfs refuses an upper layer without it
      const std::size_t need = fuse_add_direntry(req, buffer.data() + used, size - used, entry.name.c_str(), &st,
                                                 static_cast<off_t>(next + 1));
      if (need > size - used) break;
      used += need;
    }
    fuse_reply_buf(req, buffer.data(), used);
  });
}

void op_releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete reinterpret_cast<Listing*>(fi->fh);
  fuse_reply_err(req, 0);
}

void op_statfs(fuse_req_t req, fuse_ino_t) {
  answer(req, [&](Volume& volume) {
    const Volume::Usage u = volume.usage();
    struct statvfs st {};
    st.f_bsize = st.f_frsize = u.block_size;
    st.f_blocks = u.blocks;
    st.f_bfree = u.free_blocks;
    st.f_bavail = u.available_blocks;
    st.f_files = u.inodes;
    st.f_ffree = st.f_favail = u.free_inodes;
    st.f_namemax = 255;
    fuse_reply_statfs(req, &st);
  });
}

// What getxattr and listxattr answer: the size asked for (size 0), the bytes, or ERANGE.
void reply_sized(fuse_req_t req, const std::string& bytes, size_t size) {
  if (size == 0)
    fuse_reply_xattr(req, bytes.size());
  else if (bytes.size() > size)
    fuse_reply_err(req, ERANGE);
  else
    fuse_reply_buf(req, bytes.data(), bytes.size());
}

void op_setxattr(fuse_req_t req, fuse_ino_t node, const char* name, const char* value, size_t size, int flags) {
  answer(req, [&](Volume& volume) {
    volume.set_xattr(ino_of(node), name, std::string_view(value, size), flags);
    fuse_reply_err(req, 0);
  });
}

void op_getxattr(fuse_req_t req, fuse_ino_t node, const char* name, size_t size) {
  answer(req, [&](Volume& volume) {
    // Asked before every write (security.capability) and every overlayfs lookup
    // (user.overlay.*): most are answered ENODATA, without an exception.
    std::string value;
    if (!volume.find_xattr(ino_of(node), name, value)) {
      fuse_reply_err(req, ENODATA);
      return;
    }
    reply_sized(req, value, size);
  });
}

void op_listxattr(fuse_req_t req, fuse_ino_t node, size_t size) {
  answer(req, [&](Volume& volume) {
    std::string names;
    for (const std::string& name : volume.list_xattrs(ino_of(node))) names.append(name).push_back('\0');
    reply_sized(req, names, size);
  });
}

void op_removexattr(fuse_req_t req, fuse_ino_t node, const char* name) {
  answer(req, [&](Volume& volume) {
    volume.remove_xattr(ino_of(node), name);
    fuse_reply_err(req, 0);
  });
}

fuse_lowlevel_ops operations() {
  fuse_lowlevel_ops ops{};
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.forget = op_forget;
  ops.forget_multi = op_forget_multi;
  ops.getattr = op_getattr;
  ops.setattr = op_setattr;
  ops.readlink = op_readlink;
  ops.mknod = op_mknod;
  ops.mkdir = op_mkdir;
  ops.symlink = op_symlink;
  ops.link = op_link;
  ops.unlink = op_unlink;
  ops.rmdir = op_rmdir;
  ops.rename = op_rename;
  ops.open = op_open;
  ops.create = op_create;
  ops.read = op_read;
  ops.write = op_write;
  ops.release = op_release;
  ops.fsync = op_fsync;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.releasedir = op_releasedir;
  ops.fsyncdir = op_fsync;
  ops.statfs = op_statfs;
  ops.setxattr = op_setxattr;
  ops.getxattr = op_getxattr;
  ops.listxattr = op_listxattr;
  ops.removexattr = op_removexattr;
  return ops;
}

void on_wake(int) {}

// What the waiting thread waits for: SIGTERM (blocked in every thread, read from a
// signalfd), `finished` (sent by the reading thread when its loop ended first) and, when
// given, the end of the container itself. The server does not rely on its parent-death
// signal alone: a server that missed it kept its container's stderr open, and the run
// that had just failed never ended for its caller (session 11, 1 run in 6 under load).
class EndOfService {
 public:
  EndOfService(const sigset_t& signals, const EndWatch* container)
      : signals_(::signalfd(-1, &signals, SFD_CLOEXEC)), container_(container) {}

  // Returns true for SIGTERM or the container's end, false for `finished`.
  bool await(int finished) const {
    const int container_fd = container_ != nullptr ? container_->poll_fd() : -1;
    // Without a pidfd (kernels before 5.3) the container's end is polled.
    const int timeout_ms = container_ != nullptr && container_fd < 0 ? 100 : -1;
    for (;;) {
      pollfd fds[2] = {{signals_.get(), POLLIN, 0}, {container_fd, POLLIN, 0}};
      const int ready = ::poll(fds, container_fd >= 0 ? 2 : 1, timeout_ms);
      if (ready < 0 && errno != EINTR) return true;  // cannot wait: end rather than hang
      if ((fds[0].revents & POLLIN) != 0) {
        signalfd_siginfo info{};
        if (::read(signals_.get(), &info, sizeof info) == sizeof info)
          return static_cast<int>(info.ssi_signo) != finished;
      }
      if (container_ != nullptr && ((fds[1].revents & POLLIN) != 0 || (container_fd < 0 && container_->ended())))
        return true;
    }
  }

 private:
  UniqueFd signals_;
  const EndWatch* container_;
};

// Serves requests until the connection ends, SIGTERM arrives, or the container ends
// (waited for by a second thread). A loop of its own rather than fuse_session_loop: an
// end that came just before the loop blocked in read(2) would go unnoticed until the
// next request, which may never come. So the waiting thread, once the end has come, sends
// the reading thread a signal whose handler ends its read (EINTR), and sends it again
// until the loop has ended. Without a poll(2) before each read: one system call less
// per request (bench/overlay.sh makes some 350,000).
void serve_requests(fuse_session* session, FuseUring& uring, const sigset_t& term, const EndWatch* container) {
  const int wake = SIGRTMIN + 1;
  struct sigaction action {};
  action.sa_handler = on_wake;  // no SA_RESTART: the read returns EINTR
  sigemptyset(&action.sa_mask);
  ::sigaction(wake, &action, nullptr);
  // The waiting thread also wakes on `finished`, sent when the loop ended first.
  const int finished = SIGRTMIN + 2;
  sigset_t awaited = term;
  sigaddset(&awaited, finished);
  ::pthread_sigmask(SIG_BLOCK, &awaited, nullptr);
  // The wake signal must reach the reading thread whatever mask it inherited.
  sigset_t wake_set;
  sigemptyset(&wake_set);
  sigaddset(&wake_set, wake);
  ::pthread_sigmask(SIG_UNBLOCK, &wake_set, nullptr);
  const EndOfService end_of_service(awaited, container);
  std::atomic<bool> ending{false}, done{false};
  const pthread_t reader = ::pthread_self();
  std::thread waiter([&] {
    if (!end_of_service.await(finished) || done) return;  // the loop ended first, and woke this thread
    ending = true;
    while (!done) {
      ::pthread_kill(reader, wake);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  fuse_buf buffer{};
  while (!ending) {
    const int got = fuse_session_receive_buf(session, &buffer);
    if (got == -EINTR || got == -EAGAIN) continue;
    if (got <= 0) break;  // 0 after ENODEV: unmounted
    uring.process_from_device(buffer);
    if (fuse_session_exited(session)) break;
  }
  done = true;
  ::pthread_kill(waiter.native_handle(), finished);
  waiter.join();
  std::free(buffer.mem);
}

}  // namespace

int serve(Volume& volume, int fuse_fd, const EndWatch* container, bool io_uring) {
  // The container's process group gets the terminal's and the batch system's signals;
  // the container decides what to do with them and still needs its files meanwhile.
  for (int sig : {SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2})
    ::signal(sig, SIG_IGN);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, nullptr);
  try {
    volume.start_writing();
  } catch (const Errno& e) {
    log::error({"ext3 FUSE server: cannot start writing: ", std::strerror(e.value)});
    return 1;
  }
  const fuse_lowlevel_ops ops = operations();
  char program[] = "capsa";
  char* argv[] = {program, nullptr};
  fuse_args args = FUSE_ARGS_INIT(1, argv);
  Served served{volume};
  fuse_session* session = fuse_session_new(&args, &ops, sizeof(ops), &served);
  fuse_opt_free_args(&args);
  int status = 1;
  if (session != nullptr) {
    // libfuse takes a mounted connection as "/dev/fd/N" and skips mounting.
    const std::string mountpoint = "/dev/fd/" + std::to_string(fuse_fd);
    if (fuse_session_mount(session, mountpoint.c_str()) == 0) {
      std::mutex serving;
      FuseUring uring(session, fuse_fd, serving, io_uring);
      serve_requests(session, uring, term, container);
      uring.stop();  // before the volume closes: no handler may run after
      log::debug({"ext3 FUSE server: ", std::to_string(uring.answered_through_rings()),
                  " requests answered through io_uring (", std::to_string(uring.queues_in_use()), " queues)"});
      status = 0;
    }
  }
  // Written back before the connection goes: the overlay's lock is released only when
  // this process ends, after the file system is clean.
  try {
    volume.close();
  } catch (const Errno& e) {
    log::error({"ext3 FUSE server: writing the overlay back failed: ", std::strerror(e.value)});
    status = 1;
  }
  if (session != nullptr) fuse_session_destroy(session);
  return status;
}

}  // namespace capsa::ext3
