#pragma once
// A file that appears under its final name only when complete: written to a temporary
// name in the same directory, fsync'ed, then renamed. Destroyed without commit(), it
// removes the temporary, so a failure never leaves partial output behind.

#include <string>

#include "util/fd.hpp"

namespace capsa {

class AtomicFile {
 public:
  AtomicFile(std::string final_path, unsigned mode);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  int fd() const { return fd_.get(); }
  const std::string& temp_path() const { return temp_path_; }

  // Flushes and renames over the final path. `replace` false refuses to overwrite.
  void commit(bool replace = true);

 private:
  std::string final_path_;
  std::string temp_path_;
  UniqueFd fd_;
  bool committed_ = false;
};

}  // namespace capsa
