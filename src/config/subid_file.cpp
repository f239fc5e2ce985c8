#include "config/subid_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <optional>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::config {
namespace {

constexpr std::uint64_t kRangeCount = 65536;
constexpr std::uint64_t kHighestStart = (std::uint64_t{1} << 32) - 2 * kRangeCount;
constexpr std::uint64_t kLowestStart = kRangeCount;

struct Entry {
  std::string owner;  // a user name or a uid, without the '!'
  bool disabled = false;
  std::uint64_t start = 0;
  std::uint64_t count = 0;
};

std::optional<std::uint64_t> number(std::string_view text) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || value > UINT32_MAX)
    return std::nullopt;
  return value;
}

// OWNER:START:COUNT; nullopt for a line that is not one (a comment, a malformed line).
std::optional<Entry> parse(const std::string& line) {
  const auto first = line.find(':');
  if (first == std::string::npos || first == 0) return std::nullopt;
  const auto second = line.find(':', first + 1);
  if (second == std::string::npos) return std::nullopt;
  Entry e;
  e.owner = line.substr(0, first);
  if (e.owner[0] == '!') {
    e.disabled = true;
    e.owner.erase(0, 1);
  }
  auto start = number(std::string_view(line).substr(first + 1, second - first - 1));
  auto count = number(std::string_view(line).substr(second + 1));
  if (!start || !count || *count == 0 || e.owner.empty() || e.owner[0] == '#') return std::nullopt;
  e.start = *start;
  e.count = *count;
  return e;
}

bool belongs_to(const Entry& e, const SubidUser& user) {
  return e.owner == user.name || e.owner == std::to_string(user.uid);
}

}  // namespace

SubidFile SubidFile::load(const std::string& path) {
  SubidFile file(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return file;
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path);
  for (std::string line; std::getline(in, line);) file.lines_.push_back(line);
  return file;
}

long SubidFile::entry_of(const SubidUser& user) const {
  long exact = -1, largest = -1;
  std::uint64_t largest_count = 0;
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    auto e = parse(lines_[i]);
    if (!e || !belongs_to(*e, user)) continue;
    if (e->count == kRangeCount && exact < 0) exact = static_cast<long>(i);
    if (e->count > kRangeCount && e->count > largest_count) {
      largest = static_cast<long>(i);
      largest_count = e->count;
    }
  }
  return exact >= 0 ? exact : largest;
}

bool SubidFile::add_user(const SubidUser& user) {
  if (entry_of(user) >= 0) return false;
  std::vector<Entry> taken;
  for (const std::string& line : lines_)
    if (auto e = parse(line)) taken.push_back(*e);
  // From the top down, as Apptainer allocates: ranges that distributions and useradd
  // hand out (from 100000 up) are left alone.
  for (std::uint64_t start = kHighestStart; start >= kLowestStart; start -= kRangeCount) {
    bool free = true;
    for (const Entry& e : taken)
      if (start < e.start + e.count && e.start < start + kRangeCount) free = false;
    if (free) {
      lines_.push_back(std::to_string(user.uid) + ":" + std::to_string(start) + ":" + std::to_string(kRangeCount));
      return true;
    }
  }
  throw Error(path_ + ": no free range of 65536 ids left for " + user.name);
}

bool SubidFile::remove_user(const SubidUser& user) {
  const long i = entry_of(user);
  if (i < 0) throw Error(path_ + ": no mapping entry for " + user.name + " (nothing to remove)");
  lines_.erase(lines_.begin() + i);
  return true;
}

bool SubidFile::enable_user(const SubidUser& user) {
  const long i = entry_of(user);
  if (i < 0) throw Error(path_ + ": no mapping entry for " + user.name + " (add one with --add)");
  std::string& line = lines_[static_cast<std::size_t>(i)];
  if (line[0] != '!') return false;
  line.erase(0, 1);
  return true;
}

bool SubidFile::disable_user(const SubidUser& user) {
  const long i = entry_of(user);
  if (i < 0) throw Error(path_ + ": no mapping entry for " + user.name + " (nothing to disable)");
  std::string& line = lines_[static_cast<std::size_t>(i)];
  if (line[0] == '!') return false;
  line.insert(0, "!");
  return true;
}

void SubidFile::save() const {
  std::string text;
  for (const std::string& line : lines_) text += line + "\n";
  const std::string temporary = path_ + ".capsa-new";
  {
    UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
    if (!fd) throw_errno("writing " + temporary);
    ::fchmod(fd.get(), 0644);  // whatever the umask
    const char* data = text.data();
    std::size_t left = text.size();
    while (left > 0) {
      ssize_t n = ::write(fd.get(), data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = errno;
        ::unlink(temporary.c_str());
        errno = err;
        throw_errno("writing " + temporary);
      }
      data += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
      ::unlink(temporary.c_str());
      throw_errno("writing " + temporary);
    }
  }
  if (::rename(temporary.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temporary.c_str());
    errno = err;
    throw_errno("replacing " + path_);
  }
}

}  // namespace capsa::config
