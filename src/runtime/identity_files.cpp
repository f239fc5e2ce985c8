#include "runtime/identity_files.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

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
  return account;
}

std::string passwd_with_caller(const std::string& image_passwd, const CallerAccount& c) {
  std::string out;
  std::istringstream in(image_passwd);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && field(line, 2) == std::to_string(c.uid)) continue;
    out += line + "\n";
  }
  return with_trailing_newline(out) + c.name + ":x:" + std::to_string(c.uid) + ":" + std::to_string(c.gid) + ":" +
         c.gecos + ":" + c.home + ":" + c.shell + "\n";
}

std::string group_with_caller(const std::string& image_group, const CallerAccount& c) {
  std::string out;
  bool have_group = false;
  std::istringstream in(image_group);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && field(line, 2) == std::to_string(c.gid)) have_group = true;
    out += line + "\n";
  }
  if (!have_group) out = with_trailing_newline(out) + c.group_name + ":x:" + std::to_string(c.gid) + ":" + c.name + "\n";
  return out;
}

}  // namespace capsa::runtime
