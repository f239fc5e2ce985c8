#pragma once
// Reading untrusted JSON documents (manifests, indexes, configs) field by field, with
// one-line errors that name the field ("layers[2].size: must be a non-negative integer").
// Internal to src/oci: the one place where registry JSON is interpreted.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capsa::oci::detail {

using Json = nlohmann::json;

// Parses `bytes` as one JSON document, refusing more than `max_bytes` and nesting deeper
// than 64 levels (so that rendering or destroying the value cannot exhaust the stack).
// Throws FormatError "the document is empty" or "not valid JSON: ...".
Json parse_json(std::string_view bytes, std::size_t max_bytes);

// A JSON object and its path in the document, for messages.
class Fields {
 public:
  // Throws FormatError "<path>: must be an object" unless `json` is an object.
  Fields(const Json& json, std::string path);

  // nullptr when the member is absent or null (Docker writes "Cmd": null).
  const Json* find(std::string_view key) const;
  std::string path_of(std::string_view key) const;

  std::string string(std::string_view key) const;  // required
  std::optional<std::string> optional_string(std::string_view key) const;
  std::int64_t size(std::string_view key) const;  // required, integer >= 0
  std::optional<std::int64_t> optional_integer(std::string_view key) const;
  std::optional<bool> optional_bool(std::string_view key) const;
  std::optional<std::vector<std::string>> optional_strings(std::string_view key) const;
  std::map<std::string, std::string> string_map(std::string_view key) const;  // empty when absent
  std::vector<std::string> keys_of(std::string_view key) const;               // an object's keys; empty when absent
  Fields object(std::string_view key) const;                                  // required
  std::optional<Fields> optional_object(std::string_view key) const;
  // A required array.
  const Json& array(std::string_view key) const;

  const Json& json() const { return *json_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(std::string_view key, std::string_view why) const;
  const Json& require(std::string_view key) const;
  const Json* json_;
  std::string path_;
};

}  // namespace capsa::oci::detail
