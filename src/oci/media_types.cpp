#include "oci/media_types.hpp"

#include <algorithm>
#include <cctype>

namespace capsa::oci {

std::string essence_of(std::string_view content_type) {
  content_type = content_type.substr(0, content_type.find(';'));
  auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  while (!content_type.empty() && is_space(content_type.front())) content_type.remove_prefix(1);
  while (!content_type.empty() && is_space(content_type.back())) content_type.remove_suffix(1);
  std::string result(content_type);
  std::transform(result.begin(), result.end(), result.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return result;
}

bool is_index_type(std::string_view t) { return t == media_type::kOciIndex || t == media_type::kDockerManifestList; }

bool is_manifest_type(std::string_view t) { return t == media_type::kOciManifest || t == media_type::kDockerManifest; }

bool is_schema1_type(std::string_view t) {
  return t == media_type::kDockerSchema1 || t == media_type::kDockerSchema1Signed;
}

bool is_config_type(std::string_view t) { return t == media_type::kOciConfig || t == media_type::kDockerConfig; }

std::optional<Compression> layer_compression(std::string_view t) {
  using namespace media_type;
  if (t == kOciLayer || t == kOciLayerNondistributable) return Compression::None;
  if (t == kOciLayerGzip || t == kOciLayerNondistributableGzip || t == kDockerLayerGzip || t == kDockerForeignLayerGzip)
    return Compression::Gzip;
  if (t == kOciLayerZstd || t == kOciLayerNondistributableZstd) return Compression::Zstd;
  return std::nullopt;
}

std::string_view name_of(Compression c) {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Gzip: return "gzip";
    case Compression::Zstd: return "zstd";
  }
  return "none";
}

}  // namespace capsa::oci
