#include "ecl/ecl_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace capsa::ecl {
namespace {

[[noreturn]] void fail_at(const std::string& path, const toml::source_region& where, const std::string& message) {
  throw FormatError(path + ":" + std::to_string(where.begin.line) + ": " + message);
}

bool is_fingerprint(std::string_view text) {
  return text.size() == 40 && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c); });
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  ExecutionControlList parse(std::string_view text) {
    toml::table root;
    try {
      root = toml::parse(text, path_);
    } catch (const toml::parse_error& e) {
      fail_at(path_, e.source(), std::string(e.description()));
    }
    ExecutionControlList list;
    list.path = path_;
    for (auto&& [key, node] : root) {
      const std::string name(key.str());
      if (name == "activated") {
        list.activated = boolean(name, node);
      } else if (name == "legacyinsecure") {
        list.legacy = boolean(name, node);
      } else if (name == "execgroup") {
        const toml::array* groups = node.as_array();
        if (groups == nullptr || !groups->is_array_of_tables())
          fail_at(path_, node.source(), "execgroup must be [[execgroup]] tables");
        for (const toml::node& group : *groups) list.groups.push_back(exec_group(*group.as_table()));
      } else {
        fail_at(path_, key.source(),
                "unknown key \"" + name + "\" (an ecl.toml has activated, legacyinsecure and [[execgroup]] tables)");
      }
    }
    std::set<std::string> dirpaths;
    for (const ExecGroup& group : list.groups)
      if (!dirpaths.insert(group.dirpath).second)
        throw FormatError(path_ + ":" + std::to_string(group.line) + ": execgroup \"" + group.tagname + "\": " +
                          (group.dirpath.empty() ? "a second execgroup without dirpath"
                                                 : "dirpath " + group.dirpath + " is another execgroup's already") +
                          " (a dirpath may appear in one execgroup only)");
    return list;
  }

 private:
  bool boolean(const std::string& name, const toml::node& node) const {
    if (const auto* value = node.as_boolean()) return value->get();
    fail_at(path_, node.source(), name + " must be true or false");
  }

  std::string string(const std::string& name, const toml::node& node) const {
    if (const auto* value = node.as_string()) return value->get();
    fail_at(path_, node.source(), name + " must be a string in quotes");
  }

  ExecGroup exec_group(const toml::table& table) const {
    ExecGroup group;
    group.line = static_cast<int>(table.source().begin.line);
    bool has_mode = false;
    for (auto&& [key, node] : table) {
      const std::string name(key.str());
      if (name == "tagname") {
        group.tagname = string(name, node);
      } else if (name == "mode") {
        const std::string mode = string(name, node);
        if (mode == "whitelist")
          group.mode = Mode::whitelist;
        else if (mode == "whitestrict")
          group.mode = Mode::whitestrict;
        else if (mode == "blacklist")
          group.mode = Mode::blacklist;
        else
          fail_at(path_, node.source(), "mode \"" + mode + "\": expected whitelist, whitestrict or blacklist");
        has_mode = true;
      } else if (name == "dirpath") {
        group.dirpath = string(name, node);
        check_dirpath(group.dirpath, node.source());
      } else if (name == "keyfp") {
        const toml::array* keys = node.as_array();
        if (keys == nullptr) fail_at(path_, node.source(), "keyfp must be a list of fingerprints: [\"40 hex digits\"]");
        for (const toml::node& key_node : *keys) {
          const std::string fingerprint = string("each keyfp", key_node);
          if (!is_fingerprint(fingerprint))
            fail_at(
                path_, key_node.source(),
                "keyfp \"" + fingerprint + "\" is no OpenPGP fingerprint (40 hex digits, as `capsa key list` shows)");
          group.keyfps.push_back(upper(fingerprint));
        }
      } else {
        fail_at(path_, key.source(),
                "unknown key \"" + name + "\" in an execgroup (it has tagname, mode, dirpath and keyfp)");
      }
    }
    const std::string at = path_ + ":" + std::to_string(group.line) + ": execgroup";
    if (group.tagname.empty()) throw FormatError(at + " has no tagname (refusals name the rule by it)");
    if (!has_mode)
      throw FormatError(at + " \"" + group.tagname + "\" has no mode (whitelist, whitestrict or blacklist)");
    if (group.keyfps.empty()) throw FormatError(at + " \"" + group.tagname + "\" lists no keyfp");
    return group;
  }

  // Apptainer compares dirpath with the image's resolved directory as text, so a dirpath
  // that is relative, unclean or goes through a symbolic link would never match.
  void check_dirpath(const std::string& dirpath, const toml::source_region& where) const {
    if (dirpath.empty()) return;
    if (dirpath.front() != '/') fail_at(path_, where, "dirpath " + dirpath + " is not an absolute path");
    char resolved[PATH_MAX];
    if (::realpath(dirpath.c_str(), resolved) == nullptr)
      fail_at(path_, where, "dirpath " + dirpath + " does not exist (" + errno_text() + ")");
    if (dirpath != resolved)
      fail_at(path_, where,
              "dirpath " + dirpath + " must be written as " + resolved + " (symbolic links resolved, no trailing /)");
  }

  static std::string errno_text() { return std::strerror(errno); }

  std::string path_;
};

}  // namespace

std::string_view name_of(Mode mode) {
  switch (mode) {
    case Mode::whitelist:
      return "whitelist";
    case Mode::whitestrict:
      return "whitestrict";
    case Mode::blacklist:
      return "blacklist";
  }
  return "?";
}

const ExecGroup* ExecutionControlList::group_for(const std::string& directory) const {
  for (const ExecGroup& group : groups)
    if (!group.dirpath.empty() && group.dirpath == directory) return &group;
  for (const ExecGroup& group : groups)
    if (group.dirpath.empty()) return &group;
  return nullptr;
}

ExecutionControlList parse_ecl(std::string_view text, const std::string& path) { return Parser(path).parse(text); }

void check_ecl_owner(const std::string& path, uid_t owner, mode_t mode, uid_t installer) {
  if (owner != 0 && owner != installer)
    throw Error(path + " is owned by uid " + std::to_string(owner) +
                ", and an execution control list must be owned by root: chown root " + path);
  if ((mode & (S_IWGRP | S_IWOTH)) != 0)
    throw Error(path + " may be written by group or others, and an execution control list must not: chmod go-w " +
                path);
}

ExecutionControlList read_ecl(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("reading the execution control list " + path);
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0) throw_errno(path);
    if (!S_ISREG(st.st_mode)) throw Error(path + " is not a regular file (the execution control list)");
    struct stat exe {};
    const std::string executable = running_executable();
    const uid_t installer = !executable.empty() && ::stat(executable.c_str(), &exe) == 0 ? exe.st_uid : 0;
    check_ecl_owner(path, st.st_uid, st.st_mode, installer);
    char buffer[8192];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_errno("reading " + path);
      if (n == 0) break;
      text.append(buffer, static_cast<std::size_t>(n));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return parse_ecl(text, path);
}

}  // namespace capsa::ecl
