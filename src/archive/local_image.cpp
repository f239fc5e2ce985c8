#include "archive/local_image.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "archive/decompress.hpp"
#include "archive/image_files.hpp"
#include "util/error.hpp"

namespace capsa::archive {
namespace {

// The archive's files, read in place; a compressed one is decompressed to scratch first.
ImageFiles archive_files(const std::string& path, const ScratchDirectory& scratch) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw SystemError(path, errno);
  if (S_ISREG(st.st_mode) && is_compressed_file(path)) {
    const std::string plain = scratch() + "/archive.tar";
    decompress_file(path, plain);
    try {
      return ImageFiles::tar(plain, path);
    } catch (const FormatError& e) {
      std::string message = e.what();
      if (message.starts_with(plain)) message.replace(0, plain.size(), path + " (decompressed)");
      throw FormatError(message);
    }
  }
  return ImageFiles::tar(path);
}

}  // namespace

LocalImage open_local_image(const LocalSource& source, const oci::Platform& platform, const ScratchDirectory& scratch) {
  switch (source.kind) {
    case LocalSource::Kind::OciLayout:
      return read_oci_layout(ImageFiles::directory(source.path), source, platform);
    case LocalSource::Kind::OciArchive:
      return read_oci_layout(archive_files(source.path, scratch), source, platform);
    case LocalSource::Kind::DockerArchive: {
      ImageFiles files = archive_files(source.path, scratch);
      // Docker 25 saves an OCI layout too; one without manifest.json is only that.
      if (!files.has("manifest.json") && files.has("oci-layout")) return read_oci_layout(files, source, platform);
      return read_docker_archive(files, source);
    }
  }
  return {};
}

}  // namespace capsa::archive
