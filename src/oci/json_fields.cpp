#include "oci/json_fields.hpp"

#include <limits>

#include "util/error.hpp"

namespace capsa::oci::detail {
namespace {

constexpr int kMaxDepth = 64;

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at ...".
std::string without_exception_id(const char* what) {
  std::string_view s = what;
  if (!s.empty() && s.front() == '[') {
    auto close = s.find("] ");
    if (close != std::string_view::npos) s.remove_prefix(close + 2);
  }
  return std::string(s);
}

}  // namespace

Json parse_json(std::string_view bytes, std::size_t max_bytes) {
  if (bytes.size() > max_bytes)
    throw FormatError("document of " + std::to_string(bytes.size()) + " bytes is larger than the " +
                      std::to_string(max_bytes) + " bytes accepted");
  if (bytes.empty()) throw FormatError("the document is empty");
  auto limit_depth = [](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxDepth)
      throw FormatError("not valid JSON: nested deeper than " + std::to_string(kMaxDepth) + " levels");
    return true;
  };
  try {
    return Json::parse(bytes.begin(), bytes.end(), limit_depth);
  } catch (const Json::exception& e) {
    throw FormatError("not valid JSON: " + without_exception_id(e.what()));
  }
}

Fields::Fields(const Json& json, std::string path) : json_(&json), path_(std::move(path)) {
  if (!json.is_object()) throw FormatError(path_.empty() ? "not a JSON object" : path_ + ": must be an object");
}

std::string Fields::path_of(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void Fields::fail(std::string_view key, std::string_view why) const {
  throw FormatError(path_of(key) + ": " + std::string(why));
}

const Json* Fields::find(std::string_view key) const {
  auto it = json_->find(key);
  if (it == json_->end() || it->is_null()) return nullptr;
  return &*it;
}

const Json& Fields::require(std::string_view key) const {
  const Json* value = find(key);
  if (!value) fail(key, "missing");
  return *value;
}

std::string Fields::string(std::string_view key) const {
  const Json& value = require(key);
  if (!value.is_string()) fail(key, "must be a string");
  return value.get<std::string>();
}

std::optional<std::string> Fields::optional_string(std::string_view key) const {
  if (!find(key)) return std::nullopt;
  return string(key);
}

std::optional<std::int64_t> Fields::optional_integer(std::string_view key) const {
  const Json* value = find(key);
  if (!value) return std::nullopt;
  if (value->is_number_unsigned()) {
    auto u = value->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) fail(key, "is too large");
    return static_cast<std::int64_t>(u);
  }
  if (!value->is_number_integer()) fail(key, "must be an integer");
  return value->get<std::int64_t>();
}

std::int64_t Fields::size(std::string_view key) const {
  require(key);
  auto value = optional_integer(key);
  if (*value < 0) fail(key, "must be a non-negative integer");
  return *value;
}

std::optional<bool> Fields::optional_bool(std::string_view key) const {
  const Json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) fail(key, "must be true or false");
  return value->get<bool>();
}

std::optional<std::vector<std::string>> Fields::optional_strings(std::string_view key) const {
  const Json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_array()) fail(key, "must be an array of strings");
  std::vector<std::string> result;
  for (const auto& element : *value) {
    if (!element.is_string()) fail(key, "must be an array of strings");
    result.push_back(element.get<std::string>());
  }
  return result;
}

std::map<std::string, std::string> Fields::string_map(std::string_view key) const {
  const Json* value = find(key);
  if (!value) return {};
  if (!value->is_object()) fail(key, "must be an object of strings");
  std::map<std::string, std::string> result;
  for (const auto& [name, element] : value->items()) {
    if (!element.is_string()) fail(key, "must be an object of strings");
    result.emplace(name, element.get<std::string>());
  }
  return result;
}

std::vector<std::string> Fields::keys_of(std::string_view key) const {
  const Json* value = find(key);
  if (!value) return {};
  if (!value->is_object()) fail(key, "must be an object");
  std::vector<std::string> result;
  for (const auto& item : value->items()) result.push_back(item.key());
  return result;
}

Fields Fields::object(std::string_view key) const { return Fields(require(key), path_of(key)); }

std::optional<Fields> Fields::optional_object(std::string_view key) const {
  if (!find(key)) return std::nullopt;
  return object(key);
}

const Json& Fields::array(std::string_view key) const {
  const Json& value = require(key);
  if (!value.is_array()) fail(key, "must be an array");
  return value;
}

}  // namespace capsa::oci::detail
