#pragma once
// Running a test body in a private mount namespace, where it may mount a small tmpfs
// (to fill it up) without touching the host: as root a mount namespace, as anyone else a
// user namespace mapping their own uid and gid, plus a mount namespace (what `unshare -rm`
// does). Programs the body starts inherit the namespace.
#include <functional>

namespace capsa::test {

// Forks; the child enters the namespaces and runs `body`. Returns 0 when the body
// returned true, 1 when it returned false (it prints why), 77 when the namespaces cannot
// be made here (the caller skips), or 128 + the signal that killed it.
int in_private_mount_namespace(const std::function<bool()>& body);

}  // namespace capsa::test
