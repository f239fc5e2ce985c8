#pragma once
// What the cache stores and under which name: a validated key maps to exactly one
// path inside the cache, never outside it, whatever a registry sent.

#include <optional>
#include <string>
#include <string_view>

namespace capsa::cache {

enum class EntryType {
  blob,  // a registry blob (layer, config, manifest) by its digest
  sif,   // a finished SIF, by manifest digest and platform
};

// "blob" or "sif".
std::string_view type_name(EntryType type);
// Accepts capsa's names and Apptainer's for the same things ("blobs", "oci-blob" ->
// blob; "oci", "oci-tmp" -> sif); nullopt for anything else ("all" included).
std::optional<EntryType> parse_type(std::string_view name);

class Key {
 public:
  // digest "sha256:<64 hex>" or "sha512:<128 hex>", lower case; FormatError otherwise.
  static Key blob(std::string_view digest);
  // The SIF converted from the image whose manifest has `manifest_digest`, for one
  // platform; os/arch/variant are lower-case [a-z0-9_.] words (variant may be empty).
  static Key sif(std::string_view manifest_digest, std::string_view os, std::string_view arch,
                 std::string_view variant = {});

  EntryType type() const { return type_; }
  // Inside the cache root: "blobs/sha256/<hex>" or "sif/<hex>-linux-amd64.sif".
  const std::string& relative_path() const { return relative_path_; }
  // How messages and `cache list` name it: "sha256:<hex>" or "<hex>-linux-amd64".
  const std::string& name() const { return name_; }

  // The key of an entry file found while scanning the cache, or nullopt for anything
  // that is not an entry (partials, temporaries, foreign files).
  static std::optional<Key> from_relative_path(std::string_view relative_path);

  bool operator==(const Key& other) const { return relative_path_ == other.relative_path_; }

 private:
  Key(EntryType type, std::string relative_path, std::string name)
      : type_(type), relative_path_(std::move(relative_path)), name_(std::move(name)) {}

  EntryType type_;
  std::string relative_path_;
  std::string name_;
};

}  // namespace capsa::cache
