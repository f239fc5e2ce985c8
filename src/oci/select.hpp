#pragma once
// Choosing the manifest for a platform from an index (OCI image-spec image-index.md).

#include <string_view>

#include "oci/descriptor.hpp"
#include "oci/manifest.hpp"
#include "oci/platform.hpp"

namespace capsa::oci {

// BuildKit stores provenance and SBOM attestations as index entries with platform
// unknown/unknown and this annotation; they are not images.
inline constexpr std::string_view kReferenceTypeAnnotation = "vnd.docker.reference.type";

bool is_attestation(const Descriptor& entry);

// The entry of `index` to fetch for `wanted`. Skips attestations and media types that
// are neither manifests nor indexes. The first exact platform match wins (the spec's
// rule); failing that, the best compatible variant (an amd64 v2 image for a v3 host, the
// first of equals); failing that, the first entry without a platform. The result may
// itself be an index: fetch it by digest and select again.
// Throws FormatError "no image for <wanted> in <image>; available: linux/amd64, ..."
// where `image` names the image for the user (e.g. "docker://x/y:z").
Descriptor select_manifest(const Index& index, const Platform& wanted, std::string_view image);

}  // namespace capsa::oci
