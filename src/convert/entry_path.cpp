#include "convert/entry_path.hpp"

namespace capsa::convert {

SplitPath split_entry_path(std::string_view path) {
  SplitPath result;
  if (path.size() > kMaxPathBytes) {
    result.error = "path longer than " + std::to_string(kMaxPathBytes) + " bytes";
    return result;
  }
  if (path.find('\0') != std::string_view::npos) {
    result.error = "path contains a NUL byte";
    return result;
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      result.error = "path contains a \"..\" component";
      result.components.clear();
      return result;
    }
    if (part.size() > kMaxNameBytes) {
      result.error = "name longer than " + std::to_string(kMaxNameBytes) + " bytes";
      result.components.clear();
      return result;
    }
    result.components.emplace_back(part);
  }
  return result;
}

std::string join_components(const std::vector<std::string>& components) {
  std::string path;
  for (const auto& c : components) {
    path += '/';
    path += c;
  }
  return path.empty() ? "/" : path;
}

}  // namespace capsa::convert
