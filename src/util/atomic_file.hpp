#pragma once
// A file that appears under its final name only when complete. Where the filesystem
// supports it the file is created unnamed (O_TMPFILE) in the target directory and linked
// in by commit(), so even SIGKILL leaves nothing behind; elsewhere (NFS, old kernels) it
// is written to a `.capsa-tmp-` name next to the target and renamed. Destroyed without
// commit(), it leaves no trace.

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
  // A path that opens the unfinished file (for code that wants a name, not an fd).
  const std::string& temp_path() const { return temp_path_; }

  // Flushes and moves the file to the final path. `replace` false refuses to overwrite.
  void commit(bool replace = true);

 private:
  void create_named(unsigned mode);
  void link_unnamed(bool replace);

  std::string final_path_;
  std::string temp_path_;
  UniqueFd fd_;
  bool unnamed_ = false;
  bool committed_ = false;
};

}  // namespace capsa
