#pragma once
// JSON requests to a Library API server (push, delete, search), as scs-library-client
// makes them: the token as "Authorization: Bearer", answers of the form {"data": ...} or
// {"error": {"code": N, "message": "..."}}, 404 meaning "no such thing". Every failure is one
// line naming the library, the endpoint (METHOD /path) and the status; never the token.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "library/client.hpp"
#include "registry/http.hpp"
#include "registry/options.hpp"

namespace capsa::library {

class LibraryApi {
 public:
  LibraryApi(LibraryEndpoint endpoint, registry::ClientOptions options);
  LibraryApi(const LibraryApi&) = delete;  // the session holds a reference to options_
  LibraryApi& operator=(const LibraryApi&) = delete;

  // The answer's "data" (null when the body is empty); nullopt for 404. Throws Error for
  // any other status: 401 and 403 say whether the token was refused or the action.
  std::optional<nlohmann::json> get(const std::string& path) { return call(Method::kGet, path, nullptr); }
  std::optional<nlohmann::json> post(const std::string& path, const nlohmann::json& body) {
    return call(Method::kPost, path, body);
  }
  std::optional<nlohmann::json> put(const std::string& path, const nlohmann::json& body) {
    return call(Method::kPut, path, body);
  }
  std::optional<nlohmann::json> remove(const std::string& path) { return call(Method::kDelete, path, nullptr); }
  // POST of a file's bytes (an old library's POST /v1/imagefile/ID); as post() otherwise.
  std::optional<nlohmann::json> post_file(const std::string& path, const registry::FileSlice& file,
                                          const std::function<void(std::uint64_t)>& on_sent);

  // The library's API version (GET /version's apiVersion); "" when it does not say.
  std::string api_version();

  const std::string& url() const { return endpoint_.url; }
  std::string host() const { return registry::url_host(endpoint_.url); }
  bool has_token() const { return !endpoint_.token.empty(); }
  const std::string& remote() const { return endpoint_.remote; }
  const registry::ClientOptions& options() const { return options_; }

 private:
  using Method = registry::HttpRequest::Method;
  std::optional<nlohmann::json> call(Method method, const std::string& path, const nlohmann::json& body,
                                     const registry::FileSlice* file = nullptr,
                                     const std::function<void(std::uint64_t)>* on_sent = nullptr);

  LibraryEndpoint endpoint_;
  registry::ClientOptions options_;
  registry::HttpSession session_;
};

// The "message" of a Library API error body, on one line and short; "" when there is none.
std::string library_error_message(std::string_view body);

// Whether API version `have` is `need` or later, by Semantic Versioning's precedence (the
// Library API announces features by version: 2.0.0-alpha.1 the v2 upload, 2.0.0-alpha.2
// the tags per architecture). An unreadable version is older than any.
bool api_at_least(std::string_view have, std::string_view need);

}  // namespace capsa::library
