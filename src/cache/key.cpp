#include "cache/key.hpp"

#include <algorithm>
#include <vector>

#include "util/error.hpp"

namespace capsa::cache {
namespace {

struct Digest {
  std::string algorithm;
  std::string hex;
};

bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Only algorithms whose hex length is fixed: the name becomes a path, so nothing a
// registry sends may contain '/' or "..".
Digest parse_digest(std::string_view digest) {
  auto colon = digest.find(':');
  if (colon != std::string_view::npos) {
    std::string_view algorithm = digest.substr(0, colon), hex = digest.substr(colon + 1);
    std::size_t want = algorithm == "sha256" ? 64 : algorithm == "sha512" ? 128 : 0;
    if (want != 0 && hex.size() == want && is_lower_hex(hex)) return {std::string(algorithm), std::string(hex)};
  }
  throw FormatError("\"" + std::string(digest) + "\" is not a digest (expected sha256:<64 lower-case hex digits>)");
}

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
  Digest d = parse_digest(digest);
  return Key(EntryType::blob, "blobs/" + d.algorithm + "/" + d.hex, d.algorithm + ":" + d.hex);
}

Key Key::sif(std::string_view manifest_digest, std::string_view os, std::string_view arch, std::string_view variant) {
  Digest d = parse_digest(manifest_digest);
  for (std::string_view word : {os, arch})
    if (!is_platform_word(word)) throw FormatError("\"" + std::string(word) + "\" is not a platform os or architecture");
  if (!variant.empty() && !is_platform_word(variant))
    throw FormatError("\"" + std::string(variant) + "\" is not a platform variant");
  // sha512 manifests get the algorithm in the name so that they never meet a sha256 one.
  std::string name = (d.algorithm == "sha256" ? "" : d.algorithm + "-") + d.hex + "-" + std::string(os) + "-" +
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
