#include "cache/key.hpp"

#include <algorithm>
#include <vector>

#include "oci/digest.hpp"
#include "util/error.hpp"

namespace capsa::cache {
namespace {

// Only sha256/sha512 digests with their fixed hex lengths get through oci::Digest::parse:
// the name becomes a path, so nothing a registry sends may contain '/' or "..".
bool is_platform_word(std::string_view word) {
  return !word.empty() && word.size() <= 32 && std::all_of(word.begin(), word.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
         }) && word.find("..") == std::string_view::npos;
}

}  // namespace

std::string_view type_name(EntryType type) { return type == EntryType::blob ? "blob" : "sif"; }

std::optional<EntryType> parse_type(std::string_view name) {
  if (name == "blob" || name == "blobs" || name == "oci-blob") return EntryType::blob;
  if (name == "sif" || name == "oci" || name == "oci-tmp") return EntryType::sif;
  return std::nullopt;
}

Key Key::blob(std::string_view digest) {
  oci::Digest d = oci::Digest::parse(digest);
  return Key(EntryType::blob, "blobs/" + d.algorithm() + "/" + d.hex(), d.to_string());
}

Key Key::sif(std::string_view manifest_digest, std::string_view os, std::string_view arch, std::string_view variant) {
  oci::Digest d = oci::Digest::parse(manifest_digest);
  for (std::string_view word : {os, arch})
    if (!is_platform_word(word)) throw FormatError("\"" + std::string(word) + "\" is not a platform os or architecture");
  if (!variant.empty() && !is_platform_word(variant))
    throw FormatError("\"" + std::string(variant) + "\" is not a platform variant");
  // sha512 manifests get the algorithm in the name so that they never meet a sha256 one.
  std::string name = (d.algorithm() == "sha256" ? "" : d.algorithm() + "-") + d.hex() + "-" + std::string(os) + "-" +
                     std::string(arch) + (variant.empty() ? "" : "-" + std::string(variant));
  return Key(EntryType::sif, "sif/" + name + ".sif", name);
}

std::optional<Key> Key::from_relative_path(std::string_view relative_path) {
  try {
    if (relative_path.starts_with("blobs/")) {
      std::string_view rest = relative_path.substr(6);
      auto slash = rest.find('/');
      if (slash == std::string_view::npos) return std::nullopt;
      Key key = blob(std::string(rest.substr(0, slash)) + ":" + std::string(rest.substr(slash + 1)));
      return key.relative_path() == relative_path ? std::optional(key) : std::nullopt;
    }
    if (relative_path.starts_with("sif/") && relative_path.ends_with(".sif")) {
      std::string name(relative_path.substr(4, relative_path.size() - 8));
      std::string algorithm = "sha256";
      if (name.starts_with("sha512-")) {
        algorithm = "sha512";
        name = name.substr(7);
      }
      // <hex>-<os>-<arch>[-<variant>]
      std::vector<std::string> parts;
      for (std::size_t start = 0;;) {
        auto dash = name.find('-', start);
        parts.push_back(name.substr(start, dash - start));
        if (dash == std::string::npos) break;
        start = dash + 1;
      }
      if (parts.size() != 3 && parts.size() != 4) return std::nullopt;
      Key key = sif(algorithm + ":" + parts[0], parts[1], parts[2], parts.size() == 4 ? parts[3] : "");
      return key.relative_path() == relative_path ? std::optional(key) : std::nullopt;
    }
  } catch (const FormatError&) {
  }
  return std::nullopt;
}

}  // namespace capsa::cache
