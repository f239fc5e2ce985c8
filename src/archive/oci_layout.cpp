// OCI image layouts (image-spec image-layout.md): oci-layout, index.json, blobs/ALG/HEX;
// the image is chosen by its org.opencontainers.image.ref.name annotation, as
// containers/image's oci: and oci-archive: transports choose it.
#include <set>

#include "archive/image_files.hpp"
#include "archive/local_image.hpp"
#include "oci/manifest.hpp"
#include "oci/select.hpp"
#include "util/error.hpp"

namespace capsa::archive {
namespace {

constexpr std::string_view kRefName = "org.opencontainers.image.ref.name";

std::string blob_name(const oci::Digest& digest) { return "blobs/" + digest.algorithm() + "/" + digest.hex(); }

std::string read_blob(const ImageFiles& files, const oci::Descriptor& descriptor, std::size_t max,
                      const std::string& what) {
  std::string bytes = files.read(blob_name(descriptor.digest), max, what);
  with_context(files.where() + ": " + what + " " + descriptor.digest.to_string(),
               [&] { oci::verify_content(descriptor, bytes); });
  return bytes;
}

std::string names_of(const oci::Index& index) {
  std::string names;
  for (const auto& entry : index.manifests) {
    auto it = entry.annotations.find(std::string(kRefName));
    names += (names.empty() ? "" : ", ") + (it == entry.annotations.end() ? entry.digest.to_string() : it->second);
  }
  return names;
}

oci::Descriptor choose_entry(const ImageFiles& files, const oci::Index& index, const LocalSource& source) {
  const std::string scheme = scheme_of(source.kind);
  if (index.manifests.empty()) throw FormatError(files.where() + ": its index.json lists no image");
  if (source.name) {
    for (const auto& entry : index.manifests) {
      auto it = entry.annotations.find(std::string(kRefName));
      if (it != entry.annotations.end() && it->second == *source.name) return entry;
    }
    throw FormatError(files.where() + ": no image tagged \"" + *source.name + "\" in it; it holds: " + names_of(index));
  }
  std::set<std::string> digests;
  for (const auto& entry : index.manifests)
    if (!oci::is_attestation(entry)) digests.insert(entry.digest.to_string());
  if (digests.size() != 1)
    throw FormatError(files.where() + ": it holds " + std::to_string(index.manifests.size()) + " images; name one as " +
                      scheme + ":" + source.path + ":TAG, TAG one of: " + names_of(index));
  for (const auto& entry : index.manifests)
    if (!oci::is_attestation(entry)) return entry;
  return index.manifests.front();
}

}  // namespace

LocalImage read_oci_layout(const ImageFiles& files, const LocalSource& source, const oci::Platform& platform) {
  if (!files.has("oci-layout")) {
    if (files.has("manifest.json"))
      throw FormatError(files.where() + ": a docker archive, not an OCI layout; use docker-archive:" + source.path);
    throw FormatError(files.where() + ": not an OCI image layout (it has no oci-layout file)");
  }
  if (!files.has("index.json")) throw FormatError(files.where() + ": not an OCI image layout (it has no index.json)");
  const oci::Index top = with_context(files.where() + ": index.json", [&] {
    return oci::parse_index(files.read("index.json", oci::kMaxManifestBytes, "the index"), "");
  });
  oci::Descriptor chosen = choose_entry(files, top, source);
  LocalImage image;
  image.content_digest = chosen.digest.to_string();

  const std::string image_name = source.written;
  std::string bytes;
  for (int depth = 0;; ++depth) {
    if (depth == 4) throw FormatError(files.where() + ": indexes nested more than 4 deep");
    bytes = read_blob(files, chosen, oci::kMaxManifestBytes, "manifest");
    if (oci::kind_of(chosen.media_type, bytes) == oci::ManifestKind::Manifest) break;
    const oci::Index index = with_context(files.where() + ": " + chosen.digest.to_string(),
                                          [&] { return oci::parse_index(bytes, chosen.media_type); });
    chosen = oci::select_manifest(index, platform, image_name);
  }
  const oci::Manifest manifest = with_context(files.where() + ": " + chosen.digest.to_string(),
                                              [&] { return oci::parse_manifest(bytes, chosen.media_type); });
  image.config = with_context(files.where(), [&] {
    return oci::parse_image_config(read_blob(files, manifest.config, oci::kMaxConfigBytes, "config"));
  });
  with_context(files.where(), [&] { oci::check_layers_match(manifest, image.config); });
  for (std::size_t i = 0; i < manifest.layers.size(); ++i) {
    const oci::Descriptor& layer = manifest.layers[i];
    convert::LayerInput input = files.layer(blob_name(layer.digest), "layer");
    if (static_cast<std::int64_t>(input.range->length) != layer.size)
      throw FormatError(files.where() + ": layer " + layer.digest.to_string() + " is " +
                        std::to_string(input.range->length) + " bytes, the manifest says " +
                        std::to_string(layer.size));
    input.diff_id = image.config.diff_ids[i].to_string();
    input.blob_digest = layer.digest.to_string();
    input.display_name = layer.digest.to_string();
    image.layers.push_back(std::move(input));
  }
  return image;
}

}  // namespace capsa::archive
