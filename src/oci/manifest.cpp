#include "oci/manifest.hpp"

#include "oci/json_fields.hpp"
#include "oci/media_types.hpp"
#include "oci/quoted.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

using detail::Fields;
using detail::Json;

constexpr std::string_view kSchema1Refused =
    "Docker schema 1 manifests are not supported (deprecated since 2017); re-push the image with a current "
    "docker, podman or skopeo";

// Content-Types that say nothing about the document: some registries and static
// mirrors serve manifests with them, and then the document has to tell.
bool is_generic(std::string_view essence) {
  return essence.empty() || essence == "application/json" || essence == "application/octet-stream" ||
         essence == "binary/octet-stream" || essence == "text/plain";
}

// The document's media type: the Content-Type when it names one, which a mediaType field
// must then equal (distribution spec, §B2); else the field; else `fallback`.
std::string media_type_of(const Fields& doc, std::string_view content_type, std::string_view fallback) {
  std::string essence = essence_of(content_type);
  auto field = doc.optional_string("mediaType");
  if (!is_generic(essence)) {
    if (field && *field != essence)
      throw FormatError("mediaType " + quote(*field) + " does not match the Content-Type " + quote(essence));
    return essence;
  }
  return field ? *field : std::string(fallback);
}

void check_schema_version(const Fields& doc) {
  auto version = doc.optional_integer("schemaVersion");
  if (!version) throw FormatError("schemaVersion: missing");
  if (*version == 1) throw FormatError(std::string(kSchema1Refused));
  if (*version != 2) throw FormatError("schemaVersion: is " + std::to_string(*version) + ", capsa reads version 2");
}

Platform parse_platform_field(const Fields& f) {
  return Platform{f.string("os"), f.string("architecture"), f.optional_string("variant").value_or("")};
}

Descriptor parse_descriptor(const Fields& f) {
  std::string media_type = f.string("mediaType");
  std::string digest_text = f.string("digest");
  Digest digest = with_context(f.path_of("digest"), [&] { return Digest::parse(digest_text); });
  Descriptor d{std::move(media_type), std::move(digest), f.size("size"), std::nullopt, {}, {}};
  if (auto platform = f.optional_object("platform")) d.platform = parse_platform_field(*platform);
  d.annotations = f.string_map("annotations");
  d.urls = f.optional_strings("urls").value_or(std::vector<std::string>{});
  return d;
}

std::string element_path(std::string_view array, std::size_t i) {
  return std::string(array) + "[" + std::to_string(i) + "]";
}

// A Content-Type that names another kind of document (an HTML error page served with
// 200, a manifest where an index was expected) is reported before the body is parsed.
void expect_content_type(std::string_view content_type, bool (*is_expected)(std::string_view), const char* kind) {
  std::string essence = essence_of(content_type);
  if (is_schema1_type(essence)) throw FormatError(std::string(kSchema1Refused));
  if (!is_generic(essence) && !is_expected(essence))
    throw FormatError("media type " + quote(essence) + " is not an image " + kind);
}

Index parse_index_document(std::string_view bytes, std::string_view content_type) {
  expect_content_type(content_type, is_index_type, "index");
  const Json json = detail::parse_json(bytes, kMaxManifestBytes);
  const Fields doc(json, "");
  Index index;
  index.media_type = media_type_of(doc, content_type, media_type::kOciIndex);
  if (!is_index_type(index.media_type))
    throw FormatError("media type " + quote(index.media_type) + " is not an image index");
  check_schema_version(doc);
  const Json& entries = doc.array("manifests");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Fields entry(entries[i], element_path("manifests", i));
    const Json* type = entry.find("mediaType");
    if (type && type->is_string() &&
        (is_index_type(type->get_ref<const std::string&>()) || is_manifest_type(type->get_ref<const std::string&>()))) {
      index.manifests.push_back(parse_descriptor(entry));
      continue;
    }
    // The spec: an unknown mediaType in `manifests` MUST NOT be an error. Keep the entry
    // when it is a well-formed descriptor (select_manifest skips it), drop it otherwise.
    try {
      index.manifests.push_back(parse_descriptor(entry));
    } catch (const FormatError&) {
    }
  }
  index.annotations = doc.string_map("annotations");
  return index;
}

Manifest parse_manifest_document(std::string_view bytes, std::string_view content_type) {
  expect_content_type(content_type, is_manifest_type, "manifest");
  const Json json = detail::parse_json(bytes, kMaxManifestBytes);
  const Fields doc(json, "");
  std::string type = media_type_of(doc, content_type, media_type::kOciManifest);
  if (is_schema1_type(type)) throw FormatError(std::string(kSchema1Refused));
  if (!is_manifest_type(type)) throw FormatError("media type " + quote(type) + " is not an image manifest");
  check_schema_version(doc);
  Descriptor config = parse_descriptor(doc.object("config"));
  if (!is_config_type(config.media_type))
    throw FormatError("config.mediaType: " + quote(config.media_type) +
                      " is not a container image config (an OCI artifact rather than an image?)");
  std::vector<Descriptor> layers;
  const Json& entries = doc.array("layers");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    Descriptor layer = parse_descriptor(Fields(entries[i], element_path("layers", i)));
    if (!layer_compression(layer.media_type))
      throw FormatError(element_path("layers", i) + ".mediaType: unsupported layer media type " +
                        quote(layer.media_type));
    layers.push_back(std::move(layer));
  }
  return Manifest{std::move(type), std::move(config), std::move(layers), doc.string_map("annotations")};
}

}  // namespace

ManifestKind kind_of(std::string_view content_type, std::string_view bytes) {
  std::string essence = essence_of(content_type);
  if (is_index_type(essence)) return ManifestKind::Index;
  if (is_manifest_type(essence)) return ManifestKind::Manifest;
  if (is_schema1_type(essence)) throw FormatError(std::string(kSchema1Refused));
  if (!is_generic(essence))
    throw FormatError("unsupported manifest media type " + quote(essence) + " (expected an image index or manifest)");
  const Json json = detail::parse_json(bytes, kMaxManifestBytes);
  if (!json.is_object()) throw FormatError("manifest is not a JSON object");
  const Fields doc(json, "");
  if (auto type = doc.optional_string("mediaType")) {
    if (is_index_type(*type)) return ManifestKind::Index;
    if (is_manifest_type(*type)) return ManifestKind::Manifest;
    if (is_schema1_type(*type)) throw FormatError(std::string(kSchema1Refused));
    throw FormatError("unsupported manifest media type " + quote(*type) + " (expected an image index or manifest)");
  }
  if (doc.find("manifests")) return ManifestKind::Index;
  if (doc.find("config") || doc.find("layers")) return ManifestKind::Manifest;
  if (doc.optional_integer("schemaVersion") == 1) throw FormatError(std::string(kSchema1Refused));
  throw FormatError("document is neither an image index nor an image manifest");
}

Index parse_index(std::string_view bytes, std::string_view content_type) {
  return with_context("image index", [&] { return parse_index_document(bytes, content_type); });
}

Manifest parse_manifest(std::string_view bytes, std::string_view content_type) {
  return with_context("image manifest", [&] { return parse_manifest_document(bytes, content_type); });
}

}  // namespace capsa::oci
