#pragma once
// The threads that answer the requests of capsa's read-only FUSE server for an image.
//
// Why not libfuse's fuse_session_loop_mt: it ends its workers with pthread_cancel, for
// which glibc loads libgcc_s.so.1, and the server had to load it before it answered the
// kernel's INIT (later, the container's pivot_root may have taken the host's libraries
// from this process's view): 0.15 ms of every unprivileged start. The loop also starts a
// thread before it reads the first request. Here the calling thread answers from the
// start, another thread is started (up to `max_threads` in all) once a request has
// found every thread busy and been answered, and the threads end by themselves when the
// kernel ends the connection: each read then fails with ENODEV.
struct fuse_session;

namespace capsa {
class EndWatch;
}

namespace capsa::squashfs {

// Answers `session`'s requests until the kernel ends the connection, then returns. When
// `container` ends first, the process exits at once with status 0 (nothing of a
// read-only server needs writing back): a server that is itself in the container's
// mount namespace would otherwise keep its own mount, and so itself, alive. Until the
// first request is answered the first read watches for that end too; then a thread
// does, started only then because the container's start waits for that answer. `container`
// must last as long as the process (the server's starter keeps it: util/detached_child).
// `end_lock`, a descriptor holding a flock or -1, is unlocked as soon as that end is
// seen, before the exit, whose teardown takes milliseconds more (runtime/lone_start.hpp).
void answer_requests(fuse_session* session, unsigned max_threads, const EndWatch& container, int end_lock = -1);

}  // namespace capsa::squashfs
