#pragma once
// The files of an image on disk, by their names inside it: an OCI layout directory
// ("index.json", "blobs/sha256/…") or the members of an uncompressed tar (an OCI
// archive, a `docker save`). Layers are handed to the converter in place, as the file
// itself or a byte range of the tar.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "archive/tar_index.hpp"
#include "convert/convert.hpp"

namespace capsa::archive {

class ImageFiles {
 public:
  static ImageFiles directory(const std::string& dir);
  // `shown_as`: the name messages give it (the compressed file a scratch tar came from).
  static ImageFiles tar(const std::string& path, const std::string& shown_as = "");

  bool has(const std::string& name) const;
  // The whole file, at most `max_bytes`; FormatError "WHERE: NAME is missing" when absent
  // or too large (`what` names it in the message: "the image index").
  std::string read(const std::string& name, std::size_t max_bytes, const std::string& what) const;
  // The file as the converter reads a layer; FormatError when absent.
  convert::LayerInput layer(const std::string& name, const std::string& what) const;

  // The archive or directory, for messages.
  const std::string& where() const { return where_; }

 private:
  std::string where_;              // what messages name
  std::string path_;               // the directory or tar read
  std::shared_ptr<TarIndex> tar_;  // null for a directory
};

}  // namespace capsa::archive
