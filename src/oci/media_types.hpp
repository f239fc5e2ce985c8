#pragma once
// Media types of the OCI image spec and of Docker's schema 2, and what capsa does with
// them. Source: OCI image-spec media-types.md and Docker's Image Manifest V2 Schema 2.

#include <optional>
#include <string>
#include <string_view>

namespace capsa::oci {

namespace media_type {
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerManifest = "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kDockerSchema1 = "application/vnd.docker.distribution.manifest.v1+json";
inline constexpr std::string_view kDockerSchema1Signed = "application/vnd.docker.distribution.manifest.v1+prettyjws";

inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kOciEmpty = "application/vnd.oci.empty.v1+json";

inline constexpr std::string_view kOciLayer = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kOciLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kOciLayerZstd = "application/vnd.oci.image.layer.v1.tar+zstd";
// Deprecated, but the image spec says implementations must still consume them.
inline constexpr std::string_view kOciLayerNondistributable = "application/vnd.oci.image.layer.nondistributable.v1.tar";
inline constexpr std::string_view kOciLayerNondistributableGzip =
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip";
inline constexpr std::string_view kOciLayerNondistributableZstd =
    "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd";
inline constexpr std::string_view kDockerLayerGzip = "application/vnd.docker.image.rootfs.diff.tar.gzip";
inline constexpr std::string_view kDockerForeignLayerGzip = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip";
}  // namespace media_type

// The Accept header for manifest requests: all four modern types in one header. Never
// omit it: without it registries fall back to schema 1 (distribution content negotiation).
inline constexpr std::string_view kManifestAccept =
    "application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

// "Application/JSON; charset=utf-8" -> "application/json": parameters dropped, lower case
// (clients SHOULD ignore parameters on Content-Type; media types are case-insensitive).
std::string essence_of(std::string_view content_type);

bool is_index_type(std::string_view media_type);     // OCI index or Docker manifest list
bool is_manifest_type(std::string_view media_type);  // OCI manifest or Docker schema 2
bool is_schema1_type(std::string_view media_type);
bool is_config_type(std::string_view media_type);

enum class Compression { None, Gzip, Zstd };
// How a layer of this media type is compressed; nullopt when it is not a layer type
// capsa can apply. The converter still sniffs magic bytes as a safety net (§B7).
std::optional<Compression> layer_compression(std::string_view media_type);
std::string_view name_of(Compression c);  // "none", "gzip", "zstd"

}  // namespace capsa::oci
