#pragma once
// Where a container's session tmpfs is mounted: a directory of the user's that only has
// to exist. Each container mounts over it in its own mount namespace, so one serves them
// all, and the usual one costs a mkdir and an lstat per start.
#include <string>

namespace capsa::runtime {

// $CAPSA_SESSION_DIR, else /tmp/.capsa-session-UID, made 0700 when missing. That name is
// predictable, and another user who makes it first must not block every container of the
// uid: when it is anyone else's, or no directory, the user's own
// /tmp/.capsa-session-UID.XXXXXX is taken instead, the first found, else a new one
// (mkdtemp: a name nobody can make ahead), so squatting costs one more directory per
// user, never a refused container.
std::string session_mount_point();

}  // namespace capsa::runtime
