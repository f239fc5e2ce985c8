#pragma once
// `capsa push IMAGE.sif library://ENTITY/COLLECTION/CONTAINER[:TAG[,TAG...]]`: the upload
// of SingularityCE's client (scs-library-client UploadImage) through the Library API:
//   1. find or create the entity, collection and container (GET, else POST /v1/entities,
//      /v1/collections, /v1/containers), then the image record by the file's sha256
//      (GET /v1/images/E/C/K:sha256.HEX?arch=A, else POST /v1/images);
//   2. unless the library has the file already: a multipart upload (POST
//      /v2/imagefile/ID/_multipart, then per part PUT .../_multipart for a presigned URL
//      and PUT of the part there, then PUT .../_multipart_complete), or the single-part one
//      (POST /v2/imagefile/ID for a presigned URL, PUT, PUT .../_complete), or an old
//      library's POST /v1/imagefile/ID; the library checks the file against its sha256;
//   3. only then the tags (POST /v2/tags/CONTAINER_ID per architecture, or /v1/tags/...).
// A part whose connection drops is sent again (a fresh presigned URL each time); the rest
// are kept. capsa asks the library to confirm the upload (its record says "uploaded", with
// the file's hash and size) before setting a tag, so a tag never names a file that is not
// all there.
// scs-library-client first tries the library's OCI registry (GET /v1/oci-redirect) and uses
// the Library API when there is none; capsa always uses the Library API, which every
// library serves. It uploads in parts from the object store's 5 MiB minimum part size,
// where scs-library-client waits until 64 MiB to save a round trip: a dropped connection
// then costs one part, not the whole image.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "library/api.hpp"
#include "library/reference.hpp"
#include "util/progress.hpp"

namespace capsa::library {

struct PushTarget {
  LibraryReference ref;           // entity, collection, container (and host, if named)
  std::vector<std::string> tags;  // ":TAG,TAG" in the reference; "latest" when none
};

// library://[HOST/]ENTITY/COLLECTION/CONTAINER[:TAG[,TAG...]]; all three names are needed
// (scs-library-client's IsLibraryPushRef). FormatError naming the reference otherwise.
PushTarget parse_push_target(std::string_view text);

struct LibraryPushOptions {
  std::string image;  // the SIF file
  PushTarget target;
  std::string description;                    // --description, on the image record
  bool require_signature = true;              // false with --allow-unsigned
  std::uint64_t multipart_minimum = 5 << 20;  // files this large or larger go in parts
};

struct LibraryPushResult {
  std::string digest;        // "sha256:HEX" of the file
  std::string architecture;  // from the SIF header
  bool already_uploaded = false;
  int resent_parts = 0;                                  // parts (or whole-file uploads) sent again after a failure
  std::optional<std::uint64_t> quota_used, quota_total;  // as the library reports them
};

// Throws Error (one line) for an image that is not signed by a trusted key (unless
// --allow-unsigned), a library that refuses or fails any step, or an upload it does not
// confirm; no tag is set then.
LibraryPushResult push_to_library(LibraryApi& api, const LibraryPushOptions& options, Progress& progress);

}  // namespace capsa::library
