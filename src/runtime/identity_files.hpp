#pragma once
// /etc/passwd and /etc/group for the container: the image's own entries plus the
// caller's, so that `id`, `whoami` and tools that look the user up work inside
// (Apptainer does the same, "config passwd/group = yes").
#include <string>
#include <sys/types.h>

namespace capsa::runtime {

struct CallerAccount {
  uid_t uid;
  gid_t gid;
  std::string name;
  std::string group_name;
  std::string gecos;
  std::string home;   // as seen inside the container
  std::string shell;
};

// The caller as the host's user database knows them (falling back to numeric names).
CallerAccount caller_account(const std::string& home_in_container);

// `image_passwd` is the image's file ("" when it has none). An entry with the caller's
// uid is replaced; other lines are kept verbatim.
std::string passwd_with_caller(const std::string& image_passwd, const CallerAccount& caller);
std::string group_with_caller(const std::string& image_group, const CallerAccount& caller);

}  // namespace capsa::runtime
