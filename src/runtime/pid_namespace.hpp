#pragma once
// -p/--pid (and --containall): a private PID namespace, as Apptainer gives it, with a
// shim init so that the command is not PID 1 (a PID 1 ignores every signal it has no
// handler for, so `kill -TERM` would not stop a plain program). --no-init leaves the
// shim out: the command is PID 1 and capsa forwards signals to it directly.
//
//   capsa (host PID namespace)   forwards signals to init, waits, then ends exactly as
//     |                          the command did (same exit code, or the same signal)
//     +- init (PID 1)            mounts the namespace's /proc, forwards signals to the
//          |                     command, reaps orphans, reports the command's status
//          +- command (PID 2)    the caller of enter_private_pid_namespace()
//
// Signals are forwarded only when a process sent them (kill, not the terminal): a
// terminal's Ctrl-C already reaches the command, which shares the foreground process
// group. When the command ends, init exits and the kernel kills whatever is left in the
// namespace; capsa's own children (the FUSE server) die with capsa.

namespace capsa::runtime {

// Call inside the container's root, with one thread. Returns only in the command's
// process; the others never return.
void enter_private_pid_namespace(bool with_init);

}  // namespace capsa::runtime
