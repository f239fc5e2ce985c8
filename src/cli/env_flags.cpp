#include "cli/env_flags.hpp"

#include <algorithm>
#include <cstdlib>

namespace capsa::cli {

std::optional<std::string> env_value(const std::string& key) {
  for (const char* prefix : {"APPTAINER_", "SINGULARITY_"}) {
    const char* value = std::getenv((prefix + key).c_str());
    if (value != nullptr && *value != '\0') return std::string(value);
  }
  return std::nullopt;
}

bool env_flag(const std::string& key) {
  auto value = env_value(key);
  if (!value) return false;
  std::string v = *value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items(1);
  for (char c : list) {
    if (c == ',')
      items.emplace_back();
    else if (c != ' ' && c != '\t')
      items.back() += c;
  }
  std::erase(items, std::string());
  return items;
}

}  // namespace capsa::cli
