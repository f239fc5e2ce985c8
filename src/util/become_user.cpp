#include "util/become_user.hpp"

#include <grp.h>
#include <unistd.h>

#include "util/error.hpp"

namespace capsa {

void become_user(const std::string& name, uid_t uid, gid_t gid) {
  uid_t real = 0, effective = 0, saved = 0;
  if (::getresuid(&real, &effective, &saved) == 0 && real == uid && effective == uid && saved == uid) return;
  // Groups first, then the gid, then the uid: each step needs the privilege the next one
  // gives up. glibc applies each to every thread of the process.
  if (::initgroups(name.c_str(), gid) != 0) throw_errno("taking the groups of " + name);
  if (::setresgid(gid, gid, gid) != 0) throw_errno("taking the gid of " + name);
  if (::setresuid(uid, uid, uid) != 0) throw_errno("taking the uid of " + name);
  if (::getresuid(&real, &effective, &saved) != 0 || real != uid || effective != uid || saved != uid ||
      (uid != 0 && ::setresuid(0, 0, 0) == 0))
    throw Error("cannot act as " + name + ": the process kept root's ids");
}

}  // namespace capsa
