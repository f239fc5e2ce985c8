#pragma once
// An image read from a local archive or layout (source.hpp): its config and its layers,
// ready for the converter. Nothing is extracted: layers are the layout's blob files or
// byte ranges of the tar. Every blob is checked against the digest the image names it
// by: the manifest and config here, the layers by the converter as it reads them.

#include <functional>
#include <string>
#include <vector>

#include "archive/source.hpp"
#include "convert/convert.hpp"
#include "oci/image_config.hpp"
#include "oci/platform.hpp"

namespace capsa::archive {

struct LocalImage {
  // What the reference resolved to: the OCI manifest or index digest, or a docker
  // archive's config digest. With the platform, it keys the converted SIF in the cache.
  std::string content_digest;
  oci::ImageConfig config;
  std::vector<convert::LayerInput> layers;  // base first; diff_id (and blob_digest where known) set
};

// A directory for scratch files that outlives the LocalImage (the caller removes it).
using ScratchDirectory = std::function<std::string()>;

// Throws FormatError (one line naming the file and what is wrong: no such file, not a tar,
// not a layout, several images and no name given, a name that is not there, a digest
// mismatch) or SystemError. A compressed archive (gzip, zstd, xz) is decompressed into
// `scratch()` first, and its layers then point there.
LocalImage open_local_image(const LocalSource& source, const oci::Platform& platform, const ScratchDirectory& scratch);

// The two formats (oci_layout.cpp, docker_archive.cpp).
class ImageFiles;
LocalImage read_oci_layout(const ImageFiles& files, const LocalSource& source, const oci::Platform& platform);
LocalImage read_docker_archive(const ImageFiles& files, const LocalSource& source);

}  // namespace capsa::archive
