#pragma once
// A SIF stored in an OCI registry as an ORAS artifact, the way Apptainer pushes and pulls
// `oras://` images (internal/pkg/client/oras: image.go, config.go, layer.go): an OCI image
// manifest with the empty config "{}" (inline as `data`) and exactly one layer, the SIF
// file itself, titled with its file name.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace capsa::oci {

inline constexpr std::string_view kSifConfigMediaType = "application/vnd.sylabs.sif.config.v1+json";
inline constexpr std::string_view kSifLayerMediaType = "application/vnd.sylabs.sif.layer.v1.sif";
// What Singularity's prototypes wrote (typo included); Apptainer still accepts it.
inline constexpr std::string_view kSifLayerMediaTypePrototype = "appliciation/vnd.sylabs.sif.layer.tar";
inline constexpr std::string_view kEmptyJsonConfig = "{}";
inline constexpr std::string_view kTitleAnnotation = "org.opencontainers.image.title";
inline constexpr std::string_view kCreatedAnnotation = "org.opencontainers.image.created";

struct SifLayer {
  std::string digest;  // "sha256:…" of the whole SIF file
  std::uint64_t size = 0;
  std::string title;  // the file name
};

// The manifest Apptainer's `push oras://` writes for `layer` with these manifest
// annotations (org.opencontainers.image.created among them), field for field in the order
// go-containerregistry serialises them.
std::string sif_manifest(const SifLayer& layer, const std::map<std::string, std::string>& annotations);

// The SIF layer of an oras:// manifest. FormatError, starting with `what`, when the
// manifest does not have exactly one layer or the layer is not a SIF.
SifLayer parse_sif_manifest(std::string_view bytes, const std::string& what);

}  // namespace capsa::oci
