#include "oci/sif_artifact.hpp"

#include <nlohmann/json.hpp>
#include <utility>

#include "oci/digest.hpp"
#include "oci/media_types.hpp"
#include "util/error.hpp"

namespace capsa::oci {

std::string sif_manifest(const SifLayer& layer, const std::map<std::string, std::string>& annotations) {
  // ordered_json keeps go-containerregistry's field order; std::map gives Go's sorted keys.
  nlohmann::ordered_json config = {{"mediaType", kSifConfigMediaType},
                                   {"size", kEmptyJsonConfig.size()},
                                   {"digest", Digest::sha256_of(kEmptyJsonConfig).to_string()},
                                   {"data", "e30="}};  // base64 of "{}"
  nlohmann::ordered_json layer_json = {{"mediaType", kSifLayerMediaType},
                                       {"size", layer.size},
                                       {"digest", layer.digest},
                                       {"annotations", {{kTitleAnnotation, layer.title}}}};
  nlohmann::ordered_json manifest = {{"schemaVersion", 2},
                                     {"mediaType", media_type::kOciManifest},
                                     {"config", config},
                                     {"layers", nlohmann::ordered_json::array({layer_json})}};
  if (!annotations.empty()) {
    nlohmann::ordered_json map = nlohmann::ordered_json::object();
    for (const auto& [key, value] : annotations) map[key] = value;
    manifest["annotations"] = map;
  }
  // Go's json.Marshal: invalid UTF-8 becomes U+FFFD, and <, >, &, U+2028, U+2029 are
  // escaped (they can only occur inside strings, so replacing them in the text is safe).
  const std::string text = manifest.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  static const std::pair<std::string_view, std::string_view> kEscapes[] = {
      {"<", "\\u003c"}, {">", "\\u003e"}, {"&", "\\u0026"}, {"\xe2\x80\xa8", "\\u2028"}, {"\xe2\x80\xa9", "\\u2029"}};
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    bool escaped = false;
    for (const auto& [raw, escape] : kEscapes) {
      if (text.compare(i, raw.size(), raw) != 0) continue;
      out += escape;
      i += raw.size();
      escaped = true;
      break;
    }
    if (!escaped) out += text[i++];
  }
  return out;
}

SifLayer parse_sif_manifest(std::string_view bytes, const std::string& what) {
  const auto manifest = nlohmann::json::parse(bytes, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object()) throw FormatError(what + ": the manifest is not a JSON object");
  const auto layers = manifest.find("layers");
  if (layers == manifest.end() || !layers->is_array())
    throw FormatError(what + ": the manifest has no layers; it is not an ORAS SIF image");
  if (layers->size() != 1)
    throw FormatError(what + ": ORAS SIF image should have a single layer, found " + std::to_string(layers->size()) +
                      " (is it a docker:// image?)");
  const auto& layer = (*layers)[0];
  const std::string media_type = layer.is_object() ? layer.value("mediaType", std::string()) : std::string();
  if (media_type != kSifLayerMediaType && media_type != kSifLayerMediaTypePrototype)
    throw FormatError(what + ": invalid layer media type '" + media_type + "' (an oras:// image has one " +
                      std::string(kSifLayerMediaType) + " layer; is it a docker:// image?)");
  SifLayer result;
  const auto digest = layer.find("digest");
  const auto size = layer.find("size");
  if (digest == layer.end() || !digest->is_string() || size == layer.end() || !size->is_number_unsigned())
    throw FormatError(what + ": the SIF layer has no valid digest and size");
  result.digest = Digest::parse(digest->get<std::string>()).to_string();
  result.size = size->get<std::uint64_t>();
  if (auto annotations = layer.find("annotations"); annotations != layer.end() && annotations->is_object())
    result.title = annotations->value(std::string(kTitleAnnotation), std::string());
  return result;
}

}  // namespace capsa::oci
