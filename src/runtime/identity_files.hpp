#pragma once
// /etc/passwd and /etc/group for the container: the image's own entries plus the
// caller's, so that `id`, `whoami` and tools that look the user up work inside
// (Apptainer does the same, "config passwd/group = yes").
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace capsa::runtime {

struct CallerAccount {
  uid_t uid;
  gid_t gid;
  std::string name;
  std::string group_name;
  std::string gecos;
  std::string home;   // as seen inside the container
  std::string shell;
  // Every group the caller is in (the host's getgroups(), then the primary group), as
  // the host names them; groups the host cannot name are left out, as Apptainer does.
  std::vector<std::pair<gid_t, std::string>> groups;
};

// The caller as the host's user database knows them (falling back to numeric names).
CallerAccount caller_account(const std::string& home_in_container);

// `image_passwd` is the image's file ("" when it has none). The first entry with the
// caller's uid is rewritten in place (the caller's name, gecos and home; the image's gid
// and shell; root keeps the image's name and gecos), else the caller's is appended. The group file gets, after the image's
// lines, one `NAME:x:GID:USER` line per group of the caller (Apptainer's files/group.go:
// even for a gid the image has, so that the caller is listed as a member).
std::string passwd_with_caller(const std::string& image_passwd, const CallerAccount& caller);
std::string group_with_caller(const std::string& image_group, const CallerAccount& caller);

}  // namespace capsa::runtime
