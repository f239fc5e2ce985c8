#pragma once
// Reading fields of JSON that a registry, a credential helper or a config file wrote:
// nlohmann's value() throws json::type_error when a field has another type, which would
// escape as a non-capsa exception. These return a default instead.
#include <nlohmann/json.hpp>
#include <string>

namespace capsa::registry {

inline std::string string_field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace capsa::registry
