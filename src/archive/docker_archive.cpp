// `docker save` archives (Docker's image tarball: manifest.json listing, per image, its
// Config file, its RepoTags and its Layers as paths inside the tar). skopeo writes them
// too (`skopeo copy … docker-archive:FILE:NAME:TAG`). The image is chosen by NAME:TAG
// (Docker Hub names normalised as Docker does), or @N, its place in manifest.json.
#include <nlohmann/json.hpp>

#include <charconv>

#include "archive/image_files.hpp"
#include "archive/local_image.hpp"
#include "oci/digest.hpp"
#include "reference/image_reference.hpp"
#include "util/error.hpp"

namespace capsa::archive {
namespace {

struct ArchivedImage {
  std::string config;
  std::vector<std::string> repo_tags;
  std::vector<std::string> layers;
};

std::vector<ArchivedImage> parse_manifest_json(const std::string& bytes, const std::string& where) {
  const nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, false);
  if (!doc.is_array()) throw FormatError(where + ": manifest.json is not a JSON array (not a docker archive?)");
  std::vector<ArchivedImage> images;
  for (const auto& item : doc) {
    ArchivedImage image;
    if (!item.is_object() || !item.contains("Config") || !item["Config"].is_string() || !item.contains("Layers") ||
        !item["Layers"].is_array())
      throw FormatError(where + ": manifest.json: an entry without Config and Layers");
    image.config = item["Config"].get<std::string>();
    for (const auto& layer : item["Layers"]) {
      if (!layer.is_string()) throw FormatError(where + ": manifest.json: a layer path that is not a string");
      image.layers.push_back(layer.get<std::string>());
    }
    if (item.contains("RepoTags") && item["RepoTags"].is_array())
      for (const auto& tag : item["RepoTags"])
        if (tag.is_string()) image.repo_tags.push_back(tag.get<std::string>());
    images.push_back(std::move(image));
  }
  if (images.empty()) throw FormatError(where + ": its manifest.json lists no image");
  return images;
}

// "busybox:latest" and "docker.io/library/busybox:latest" name the same image.
std::string normalized(const std::string& name) {
  try {
    return reference::parse_image_reference(name).to_string();
  } catch (const Error&) {
    return name;
  }
}

std::string names_of(const std::vector<ArchivedImage>& images) {
  std::string names;
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::string name = images[i].repo_tags.empty() ? "@" + std::to_string(i) : images[i].repo_tags.front();
    for (std::size_t t = 1; t < images[i].repo_tags.size(); ++t) name += " (" + images[i].repo_tags[t] + ")";
    names += (names.empty() ? "" : ", ") + name;
  }
  return names;
}

const ArchivedImage& choose(const std::vector<ArchivedImage>& images, const LocalSource& source) {
  const std::string& where = source.path;
  if (!source.name) {
    if (images.size() == 1) return images.front();
    throw FormatError(where + ": it holds " + std::to_string(images.size()) + " images; name one as docker-archive:" +
                      where + ":NAME:TAG (or :@N), one of: " + names_of(images));
  }
  const std::string& name = *source.name;
  if (name.starts_with('@')) {
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), n);
    if (ec != std::errc() || end != name.data() + name.size() || n >= images.size())
      throw FormatError(where + ": no image " + name + " in it (it holds " + std::to_string(images.size()) + ")");
    return images[n];
  }
  const std::string wanted = normalized(name);
  for (const auto& image : images)
    for (const auto& tag : image.repo_tags)
      if (normalized(tag) == wanted) return image;
  throw FormatError(where + ": no image named \"" + name + "\" in it; it holds: " + names_of(images));
}

// The digest a blob's name says it has: "blobs/sha256/HEX" (Docker 25) or "HEX.json"
// (a config, in older saves); nullopt for other names ("HEX/layer.tar", "HEX.tar").
std::optional<std::string> digest_in_name(const std::string& name) {
  std::string hex;
  if (name.starts_with("blobs/sha256/"))
    hex = name.substr(13);
  else if (name.ends_with(".json"))
    hex = name.substr(0, name.size() - 5);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return "sha256:" + hex;
}

}  // namespace

LocalImage read_docker_archive(const ImageFiles& files, const LocalSource& source) {
  if (!files.has("manifest.json"))
    throw FormatError(files.where() + ": not a docker archive (it has no manifest.json)");
  const std::vector<ArchivedImage> images =
      parse_manifest_json(files.read("manifest.json", 16u << 20, "the image list"), files.where());
  const ArchivedImage& chosen = choose(images, source);

  LocalImage image;
  const std::string config = files.read(chosen.config, 16u << 20, "config");
  const oci::Digest config_digest = oci::Digest::sha256_of(config);
  if (auto named = digest_in_name(chosen.config); named && *named != config_digest.to_string())
    throw FormatError(files.where() + ": config " + chosen.config + ": its content is " + config_digest.to_string() +
                      " (corrupt or substituted)");
  image.content_digest = config_digest.to_string();
  image.config = with_context(files.where(), [&] { return oci::parse_image_config(config); });
  if (image.config.diff_ids.size() != chosen.layers.size())
    throw FormatError(files.where() + ": manifest.json lists " + std::to_string(chosen.layers.size()) +
                      " layers, the config " + std::to_string(image.config.diff_ids.size()));
  for (std::size_t i = 0; i < chosen.layers.size(); ++i) {
    convert::LayerInput input = files.layer(chosen.layers[i], "layer");
    // Docker's layers are stored uncompressed: the diff_id is the digest of the file.
    input.diff_id = image.config.diff_ids[i].to_string();
    input.blob_digest = digest_in_name(chosen.layers[i]);
    input.display_name = chosen.layers[i];
    image.layers.push_back(std::move(input));
  }
  return image;
}

}  // namespace capsa::archive
