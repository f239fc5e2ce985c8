#pragma once
// Root giving up root for good, to act as a user on what that user controls: their ids
// and groups for the rest of the process, so that every file it opens, reads or removes
// and every signal it sends is checked by the kernel as the user's own act.
#include <sys/types.h>

#include <string>

namespace capsa {

// The user database's supplementary groups of `name`, then `gid` and `uid` (real,
// effective and saved); root's capabilities go with uid 0. A no-op when the process is
// `uid` already. Throws Error when a step fails: the caller must not carry on as root.
void become_user(const std::string& name, uid_t uid, gid_t gid);

}  // namespace capsa
