#pragma once
// An owned libarchive reader (archive_read_new / archive_read_free), shared by the code
// that reads archives and compressed streams (archive/, convert/layer_reader).
#include <archive.h>

#include <memory>
#include <new>

namespace capsa {

struct ArchiveReadFree {
  void operator()(struct archive* a) const { archive_read_free(a); }
};

using ArchiveReader = std::unique_ptr<struct archive, ArchiveReadFree>;

// A new reader with nothing enabled yet; throws std::bad_alloc when libarchive cannot.
inline ArchiveReader new_archive_reader() {
  ArchiveReader reader(archive_read_new());
  if (!reader) throw std::bad_alloc();
  return reader;
}

}  // namespace capsa
