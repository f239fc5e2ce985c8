#pragma once
// Image indexes (OCI index, Docker manifest list) and image manifests (OCI manifest,
// Docker schema 2), parsed from the exact bytes a registry sent and its Content-Type.
// Rules: OCI image-spec manifest.md and image-index.md, Docker schema 2. Hash the bytes
// (Digest::matches) before or after parsing; parsing never re-serialises them.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oci/descriptor.hpp"

namespace capsa::oci {

// Registries refuse manifests above 4 MiB (distribution's limit); so does capsa.
inline constexpr std::size_t kMaxManifestBytes = 4 * 1024 * 1024;

enum class ManifestKind { Index, Manifest };

// Whether a registry response is an index or a manifest: from the Content-Type when it
// names one of the four types, else (application/json, octet-stream, none: some
// registries and static mirrors) from the document's mediaType field or its shape.
// Throws FormatError for Docker schema 1 and for anything else that is neither.
ManifestKind kind_of(std::string_view content_type, std::string_view bytes);

struct Index {
  std::string media_type;  // kOciIndex or kDockerManifestList
  // Every entry in order, including ones select_manifest skips (attestations, unknown
  // media types: the spec says those must not be errors).
  std::vector<Descriptor> manifests;
  std::map<std::string, std::string> annotations;
};

struct Manifest {
  std::string media_type;  // kOciManifest or kDockerManifest
  Descriptor config;       // an image config (kOciConfig or kDockerConfig)
  // Base layer first. Every media type is one layer_compression() knows; the same
  // digest may appear twice (download once, apply twice; charliecloud #1539).
  std::vector<Descriptor> layers;
  std::map<std::string, std::string> annotations;
};

// Both throw FormatError "image index: ..." / "image manifest: ..." naming the field:
// not JSON, schemaVersion not 2, a mediaType field that differs from the Content-Type,
// a missing or ill-typed field, a bad digest, a negative size, a config that is not an
// image config, a layer media type capsa cannot apply (named in the message).
Index parse_index(std::string_view bytes, std::string_view content_type);
Manifest parse_manifest(std::string_view bytes, std::string_view content_type);

}  // namespace capsa::oci
