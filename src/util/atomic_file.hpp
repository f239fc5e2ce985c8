#pragma once
// A file that appears under its final name only when complete: written to a temporary
// name in the same directory, fsync'ed, then renamed. Destroyed without commit(), it
// removes the temporary, so a failure never leaves partial output behind.
// An *unnamed* temporary (O_TMPFILE, Linux >= 3.11 on ext4, XFS, btrfs, tmpfs) goes
// further: it has no name until commit() links it in, so not even SIGKILL, which no
// destructor sees, can leave a partial file behind. Where the filesystem cannot (NFS,
// Lustre) it falls back to a named temporary.

#include <string>

#include "util/fd.hpp"

namespace capsa {

class AtomicFile {
 public:
  enum class Temporary { named, unnamed_if_possible };

  AtomicFile(std::string final_path, unsigned mode, Temporary temporary = Temporary::named);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  int fd() const { return fd_.get(); }
  // Empty for an unnamed temporary: callers that reopen the file by name use `named`.
  const std::string& temp_path() const { return temp_path_; }

  // Flushes and renames over the final path. `replace` false refuses to overwrite.
  void commit(bool replace = true);

 private:
  std::string final_path_;
  std::string temp_path_;  // empty while unnamed
  UniqueFd fd_;
  bool unnamed_ = false;
  bool committed_ = false;
};

}  // namespace capsa
