#include "library/search.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "util/error.hpp"

namespace capsa::library {
namespace {

std::string query_escaped(const std::string& value) {
  std::unique_ptr<char, decltype(&curl_free)> escaped(
      curl_easy_escape(nullptr, value.c_str(), static_cast<int>(value.size())), &curl_free);
  if (!escaped) throw Error("cannot encode the search term");
  return escaped.get();
}

std::string text_of(const nlohmann::json& record, const char* key) {
  return record.contains(key) && record.at(key).is_string() ? record.at(key).get<std::string>() : "";
}

std::vector<std::string> strings_of(const nlohmann::json& record, const char* key) {
  std::vector<std::string> out;
  if (record.contains(key) && record.at(key).is_array())
    for (const auto& item : record.at(key))
      if (item.is_string()) out.push_back(item.get<std::string>());
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

// The description pushes without one were given ("No description", any case) says nothing.
bool says_something(const std::string& description) {
  std::string lower = description;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return !lower.empty() && lower != "no description";
}

}  // namespace

std::vector<FoundImage> search_library(LibraryApi& api, const std::string& term, const std::string& architecture,
                                       bool signed_only) {
  if (term.size() < 3) throw Error("search for at least 3 characters, not \"" + term + "\"");
  std::string path = "/v1/search?value=" + query_escaped(term) + "&arch=" + query_escaped(architecture);
  if (signed_only) path += "&signed=true";
  const auto data = api.get(path);
  if (!data) throw Error("the library at " + api.host() + " has no search (GET /v1/search answered HTTP 404)");
  std::vector<FoundImage> images;
  if (!data->is_object() || !data->contains("image") || data->at("image").is_null()) return images;
  if (!data->at("image").is_array())
    throw Error("the library at " + api.host() + " sent a malformed search answer (\"image\" is no list)");
  for (const auto& record : data->at("image")) {
    if (!record.is_object()) continue;
    images.push_back({text_of(record, "entityName"), text_of(record, "collectionName"),
                      text_of(record, "containerName"), strings_of(record, "tags"), text_of(record, "hash"),
                      text_of(record, "description"), strings_of(record, "fingerprints")});
  }
  return images;
}

std::string format_search(const std::vector<FoundImage>& images, const std::string& term,
                          const std::string& architecture) {
  if (images.empty()) return "No container images found for " + architecture + " matching \"" + term + "\".\n\n";
  std::vector<std::string> items;
  for (const auto& image : images) {
    std::string item = "\tlibrary://" + image.entity + "/" + image.collection + "/" + image.container + ":" +
                       (image.tags.empty() ? image.hash : joined(image.tags));
    if (says_something(image.description)) item += "\n\t\t" + image.description;
    if (!image.fingerprints.empty()) item += "\n\t\tSigned by: " + joined(image.fingerprints);
    items.push_back(item);
  }
  std::sort(items.begin(), items.end());
  std::string out = "Found " + std::to_string(images.size()) + " container images for " + architecture +
                    " matching \"" + term + "\":\n\n";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : "\n\n") + items[i];
  return out + "\n\n";
}

}  // namespace capsa::library
