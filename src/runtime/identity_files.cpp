#include "runtime/identity_files.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

namespace capsa::runtime {
namespace {

// Field `index` (0-based) of a colon-separated line, or "" when it has fewer fields.
std::string field(const std::string& line, int index) {
  std::size_t start = 0;
  for (int i = 0; i < index; ++i) {
    start = line.find(':', start);
    if (start == std::string::npos) return "";
    ++start;
  }
  return line.substr(start, line.find(':', start) - start);
}

std::string with_trailing_newline(std::string text) {
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

}  // namespace

CallerAccount caller_account(const std::string& home_in_container) {
  CallerAccount account{::getuid(), ::getgid(), "", "", "", home_in_container, "/bin/sh"};
  if (passwd* pw = ::getpwuid(account.uid)) {
    account.name = pw->pw_name;
    account.gecos = pw->pw_gecos ? pw->pw_gecos : "";
    if (pw->pw_shell && *pw->pw_shell) account.shell = pw->pw_shell;
  } else {
    account.name = "user" + std::to_string(account.uid);
  }
  if (group* gr = ::getgrgid(account.gid)) account.group_name = gr->gr_name;
  else account.group_name = "group" + std::to_string(account.gid);
  int count = ::getgroups(0, nullptr);
  std::vector<gid_t> gids(count > 0 ? static_cast<std::size_t>(count) : 0);
  if (count > 0) gids.resize(static_cast<std::size_t>(std::max(0, ::getgroups(count, gids.data()))));
  bool primary_listed = false;
  for (gid_t gid : gids) {
    if (gid == account.gid) primary_listed = true;
    if (group* gr = ::getgrgid(gid)) account.groups.emplace_back(gid, gr->gr_name);
  }
  if (!primary_listed) account.groups.emplace_back(account.gid, account.group_name);
  return account;
}

std::string passwd_with_caller(const std::string& image_passwd, const CallerAccount& c) {
  // As Apptainer's files/passwd.go: the first entry with the caller's uid is rewritten in
  // place (the caller's name and gecos, except for root, who keeps the image's; the
  // image's gid and shell; the home as seen inside); without one, the caller's host
  // entry is appended.
  std::string out;
  bool found = false;
  std::istringstream in(image_passwd);
  for (std::string line; std::getline(in, line);) {
    if (!found && !line.empty() && field(line, 2) == std::to_string(c.uid)) {
      found = true;
      out += (c.uid == 0 ? field(line, 0) : c.name) + ":x:" + std::to_string(c.uid) + ":" + field(line, 3) + ":" +
             (c.uid == 0 ? field(line, 4) : c.gecos) + ":" + c.home + ":" + field(line, 6) + "\n";
      continue;
    }
    out += line + "\n";
  }
  if (found) return out;
  return with_trailing_newline(out) + c.name + ":x:" + std::to_string(c.uid) + ":" + std::to_string(c.gid) + ":" +
         c.gecos + ":" + c.home + ":" + c.shell + "\n";
}

std::string group_with_caller(const std::string& image_group, const CallerAccount& c) {
  std::string out = with_trailing_newline(image_group);
  std::set<std::string> added;
  for (const auto& [gid, name] : c.groups) {
    std::string line = name + ":x:" + std::to_string(gid) + ":" + c.name + "\n";
    if (added.insert(line).second) out += line;
  }
  return out;
}

}  // namespace capsa::runtime
