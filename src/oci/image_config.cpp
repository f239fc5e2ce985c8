#include "oci/image_config.hpp"

#include "oci/json_fields.hpp"
#include "oci/quoted.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

using detail::Fields;
using detail::Json;

std::vector<Digest> parse_diff_ids(const Fields& rootfs) {
  auto texts = rootfs.optional_strings("diff_ids");
  if (!texts) throw FormatError(rootfs.path_of("diff_ids") + ": missing");
  std::vector<Digest> digests;
  for (std::size_t i = 0; i < texts->size(); ++i) {
    digests.push_back(with_context(rootfs.path_of("diff_ids") + "[" + std::to_string(i) + "]",
                                   [&] { return Digest::parse((*texts)[i]); }));
  }
  return digests;
}

std::vector<HistoryEntry> parse_history(const Fields& doc) {
  std::vector<HistoryEntry> history;
  const Json* entries = doc.find("history");
  if (!entries) return history;
  if (!entries->is_array()) throw FormatError("history: must be an array");
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const Fields entry((*entries)[i], "history[" + std::to_string(i) + "]");
    history.push_back(
        HistoryEntry{entry.optional_string("created").value_or(""), entry.optional_string("created_by").value_or(""),
                     entry.optional_string("author").value_or(""), entry.optional_string("comment").value_or(""),
                     entry.optional_bool("empty_layer").value_or(false)});
  }
  return history;
}

void parse_run_config(const Fields& run, ImageConfig& config) {
  config.env = run.optional_strings("Env").value_or(std::vector<std::string>{});
  config.entrypoint = run.optional_strings("Entrypoint");
  config.cmd = run.optional_strings("Cmd");
  config.working_dir = run.optional_string("WorkingDir").value_or("");
  config.user = run.optional_string("User").value_or("");
  config.labels = run.string_map("Labels");
  config.volumes = run.keys_of("Volumes");
  config.stop_signal = run.optional_string("StopSignal").value_or("");
}

ImageConfig parse_config_document(std::string_view bytes) {
  const Json json = detail::parse_json(bytes, kMaxConfigBytes);
  const Fields doc(json, "");
  ImageConfig config;
  config.architecture = doc.optional_string("architecture").value_or("");
  config.os = doc.optional_string("os").value_or("");
  config.variant = doc.optional_string("variant").value_or("");
  config.created = doc.optional_string("created").value_or("");
  config.author = doc.optional_string("author").value_or("");
  const Fields rootfs = doc.object("rootfs");
  config.rootfs_type = rootfs.string("type");
  if (config.rootfs_type != "layers")
    throw FormatError("rootfs.type: is " + quote(config.rootfs_type) + ", the image spec requires \"layers\"");
  config.diff_ids = parse_diff_ids(rootfs);
  config.history = parse_history(doc);
  config.config = Json::object();
  if (auto run = doc.optional_object("config")) {
    parse_run_config(*run, config);
    config.config = run->json();
  }
  return config;
}

}  // namespace

ImageConfig parse_image_config(std::string_view bytes) {
  return with_context("image config", [&] { return parse_config_document(bytes); });
}

void check_layers_match(const Manifest& manifest, const ImageConfig& config) {
  if (manifest.layers.size() != config.diff_ids.size())
    throw FormatError("image config lists " + std::to_string(config.diff_ids.size()) +
                      " layer diff_ids but the manifest has " + std::to_string(manifest.layers.size()) + " layers");
}

std::optional<std::string> platform_mismatch_warning(const ImageConfig& config, const Platform& wanted) {
  if (config.os.empty() || config.architecture.empty())
    return "the image does not declare its platform; it may not run on " + wanted.to_string();
  if (fitness(config.platform(), wanted)) return std::nullopt;
  return "the image is built for " + escaped(config.platform().to_string()) + ", not " + wanted.to_string() +
         "; it may not run on this host";
}

}  // namespace capsa::oci
