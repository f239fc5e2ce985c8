#pragma once
// /etc/subuid and /etc/subgid as `capsa config fakeroot` edits them, the way Apptainer's
// `config fakeroot` does (internal/pkg/fakeroot/config.go): a user gets one range of
// 65536 ids, "UID:START:65536", START the highest free multiple of 65536 below
// 2^32 - 65536; a disabled entry is the same line behind a '!' (newuidmap and capsa's
// own reader then find no range for the user); every other line stays as it was.
#include <cstdint>
#include <string>
#include <vector>

namespace capsa::config {

struct SubidUser {
  std::string name;
  std::uint32_t uid = 0;
};

class SubidFile {
 public:
  // Reads `path`; a missing file is an empty one (it is created on save).
  static SubidFile load(const std::string& path);

  // Each returns whether the file changed. add_user leaves a user who has an entry
  // (enabled or not) as they are; the others throw Error naming the file when the user
  // has none.
  bool add_user(const SubidUser& user);
  bool remove_user(const SubidUser& user);
  bool enable_user(const SubidUser& user);
  bool disable_user(const SubidUser& user);

  // Replaces the file atomically (a temporary file renamed over it), mode 0644.
  void save() const;

  const std::vector<std::string>& lines() const { return lines_; }

 private:
  explicit SubidFile(std::string path) : path_(std::move(path)) {}
  // The index of the user's entry, or -1: the line with exactly 65536 ids, else the
  // largest range above that (Apptainer's choice for a user with several lines).
  long entry_of(const SubidUser& user) const;

  std::string path_;
  std::vector<std::string> lines_;
};

}  // namespace capsa::config
