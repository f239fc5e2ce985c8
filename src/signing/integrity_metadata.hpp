#pragma once
// What a current-format SIF signature signs (apptainer/sif pkg/integrity, docs/signing.md):
// JSON {"version":1,"header":{"digest":…},"objects":[{"relativeId":…,"descriptorDigest":…,
// "objectDigest":…}]} with digests of the header's fixed part, of each object's
// descriptor fields that may not change, and of its data. Offsets, padding, group and
// modification time are left out so that the signed objects may move.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sif/image.hpp"

namespace capsa::signing {

struct ObjectDigests {
  std::uint32_t relative_id = 0;  // object ID minus the lowest ID of its group
  std::string descriptor_digest;  // "sha256:<hex>"
  std::string object_digest;
};

struct ImageMetadata {
  int version = 1;
  std::string header_digest;
  std::vector<ObjectDigests> objects;
};

// The 61 header bytes the header digest covers: launch script, magic, version, UUID.
std::string header_integrity_record(const sif::Header& header);
// The 557 descriptor bytes the descriptor digest covers (see the file comment).
std::string descriptor_integrity_record(const sif::Descriptor& d, std::uint32_t relative_id);

// The objects of a group, in ID order (empty when there are none).
std::vector<sif::Descriptor> group_objects(const sif::Image& image, std::uint32_t group_id);
// The lowest object ID in the group (relative IDs count from it); 0 when the group is empty.
std::uint32_t group_min_id(const sif::Image& image, std::uint32_t group_id);

// The metadata for `objects` (all in group `group_id`), with `algorithm` digests.
ImageMetadata compute_metadata(const sif::Image& image, std::uint32_t group_id,
                               const std::vector<sif::Descriptor>& objects, std::string_view algorithm = "sha256");

// Compact JSON with the reference implementation's key order (what gets signed).
std::string to_json(const ImageMetadata& metadata);
// Throws FormatError for JSON that is not version-1 metadata.
ImageMetadata parse_metadata(std::string_view json);

// Whether `expected` ("sha256:<hex>") is the digest of the given bytes / file range.
bool digest_matches(const std::string& expected, std::string_view bytes);
bool digest_matches_object(const std::string& expected, const sif::Image& image, const sif::Descriptor& d);

}  // namespace capsa::signing
