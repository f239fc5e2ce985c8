#include "library/api.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "util/error.hpp"

namespace capsa::library {
namespace {

const char* verb_of(registry::HttpRequest::Method method) {
  switch (method) {
    case registry::HttpRequest::Method::kPost:
      return "POST";
    case registry::HttpRequest::Method::kPut:
      return "PUT";
    case registry::HttpRequest::Method::kDelete:
      return "DELETE";
    default:
      return "GET";
  }
}

// Semantic Versioning 2.0.0 precedence (§11). Hand-written: Debian packages no C++ semver
// library, and the client needs only this ordering.
struct Version {
  std::vector<unsigned long> core;      // MAJOR.MINOR.PATCH
  std::vector<std::string> prerelease;  // dot-separated identifiers
};

std::optional<Version> parse_version(std::string_view text) {
  if (!text.empty() && text.front() == 'v') text.remove_prefix(1);
  text = text.substr(0, text.find('+'));  // build metadata has no precedence
  Version v;
  const std::size_t dash = text.find('-');
  std::string_view core = text.substr(0, dash);
  if (dash != std::string_view::npos) {
    std::string_view pre = text.substr(dash + 1);
    for (std::size_t start = 0;;) {
      const std::size_t dot = pre.find('.', start);
      v.prerelease.emplace_back(
          pre.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
      if (dot == std::string_view::npos) break;
      start = dot + 1;
    }
  }
  for (std::size_t start = 0;;) {
    const std::size_t dot = core.find('.', start);
    const std::string_view part =
        core.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    unsigned long n = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) return std::nullopt;
    v.core.push_back(n);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (v.core.size() != 3) return std::nullopt;
  return v;
}

bool numeric(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// <0, 0, >0 as a precedes, equals or follows b.
int compare(const Version& a, const Version& b) {
  for (std::size_t i = 0; i < 3; ++i)
    if (a.core[i] != b.core[i]) return a.core[i] < b.core[i] ? -1 : 1;
  if (a.prerelease.empty() || b.prerelease.empty())
    return static_cast<int>(a.prerelease.empty()) - static_cast<int>(b.prerelease.empty());  // none: later
  for (std::size_t i = 0; i < a.prerelease.size() && i < b.prerelease.size(); ++i) {
    const std::string &x = a.prerelease[i], &y = b.prerelease[i];
    if (x == y) continue;
    if (numeric(x) && numeric(y)) return x.size() != y.size() ? (x.size() < y.size() ? -1 : 1) : (x < y ? -1 : 1);
    if (numeric(x) != numeric(y)) return numeric(x) ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return a.prerelease.size() == b.prerelease.size() ? 0 : (a.prerelease.size() < b.prerelease.size() ? -1 : 1);
}

}  // namespace

bool api_at_least(std::string_view have, std::string_view need) {
  auto a = parse_version(have);
  auto b = parse_version(need);
  return a && b && compare(*a, *b) >= 0;
}

std::string library_error_message(std::string_view body) {
  std::string message;
  try {
    const auto json = nlohmann::json::parse(body);
    if (json.contains("error") && json.at("error").is_object() && json.at("error").contains("message") &&
        json.at("error").at("message").is_string())
      message = json.at("error").at("message").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return "";
  }
  for (char& c : message)
    if (std::iscntrl(static_cast<unsigned char>(c)) != 0) c = ' ';
  if (message.size() > 200) message = message.substr(0, 200) + "...";
  return message;
}

LibraryApi::LibraryApi(LibraryEndpoint endpoint, registry::ClientOptions options)
    : endpoint_(std::move(endpoint)), options_(std::move(options)), session_(options_, nullptr) {}

std::optional<nlohmann::json> LibraryApi::post_file(const std::string& path, const registry::FileSlice& file,
                                                    const std::function<void(std::uint64_t)>& on_sent) {
  return call(Method::kPost, path, nullptr, &file, &on_sent);
}

std::optional<nlohmann::json> LibraryApi::call(Method method, const std::string& path, const nlohmann::json& body,
                                               const registry::FileSlice* file,
                                               const std::function<void(std::uint64_t)>* on_sent) {
  registry::HttpRequest request;
  request.method = method;
  request.url = endpoint_.url + path;
  request.follow_redirects = false;  // libcurl would show the token to the next host too
  if (!endpoint_.token.empty()) request.headers.push_back("Authorization: Bearer " + endpoint_.token);
  if (file != nullptr) {
    request.body_file = *file;
    request.headers.emplace_back("Content-Type: application/octet-stream");
    if (on_sent != nullptr) request.on_sent = *on_sent;
  } else if (method == Method::kPost || method == Method::kPut) {
    request.body = body.dump();
    request.headers.emplace_back("Content-Type: application/json");
  }
  const registry::HttpResponse response = session_.perform(request);
  // The path without its query, as the endpoint's name in messages.
  const std::string endpoint = std::string(verb_of(method)) + " " + path.substr(0, path.find('?'));
  const std::string said = library_error_message(response.body);
  const std::string status = "HTTP " + std::to_string(response.status) + (said.empty() ? "" : ": " + said);
  if (response.status == 404) return std::nullopt;
  if (response.status == 401) {
    if (endpoint_.token.empty())
      throw Error("the library at " + host() + " asks for a token at " + endpoint + " (" + status +
                  "): log in with `capsa remote login`");
    const std::string name = endpoint_.remote.empty() ? std::string("REMOTE") : endpoint_.remote;
    throw Error("the library at " + host() + " rejected the token" +
                (endpoint_.remote.empty() ? "" : " of remote " + endpoint_.remote) + " at " + endpoint + " (" + status +
                "): it may have expired; log in again with `capsa remote login " + name + "`");
  }
  if (response.status == 403)
    throw Error("the library at " + host() + " refused " + endpoint + " (" + status +
                "): your token does not allow this");
  if (response.status < 200 || response.status > 299)
    throw Error("the library at " + host() + " answered " + status + " to " + endpoint);
  if (response.body.empty()) return nlohmann::json();
  try {
    auto json = nlohmann::json::parse(response.body);
    return json.contains("data") ? json.at("data") : nlohmann::json();
  } catch (const nlohmann::json::exception& e) {
    throw Error("the library at " + host() + " sent a malformed answer to " + endpoint + ": " + e.what());
  }
}

std::string LibraryApi::api_version() {
  registry::HttpRequest request;
  request.url = endpoint_.url + "/version";
  request.follow_redirects = false;
  const registry::HttpResponse response = session_.perform(request);
  if (response.status != 200) return "";
  try {
    const auto json = nlohmann::json::parse(response.body);
    const auto& data = json.contains("data") ? json.at("data") : json;
    return data.value("apiVersion", "");
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

}  // namespace capsa::library
