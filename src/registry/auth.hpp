#pragma once
// Registry authorization, driven by the registry's 401 challenges (B6):
//   Bearer: a token from the realm, anonymous or with Basic credentials (or an identity
//     token by the OAuth2 refresh_token grant), cached per (registry, scope) until shortly
//     before expires_in (default 60 s) runs out;
//   Basic: the credentials on every request, once the registry asked for them.
// Credentials go only to the token realm (Bearer) or the registry (Basic); libcurl drops
// the Authorization header on a redirect to any other host or port.

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "registry/credentials.hpp"
#include "registry/http.hpp"

namespace capsa::registry {

// The one-line 401 message: names registry, repository and where credentials come from.
RegistryError unauthorized_error(const std::string& registry, const std::string& repository,
                                 const std::optional<Credentials>& credentials);

class Authenticator {
 public:
  Authenticator(std::string registry, std::optional<Credentials> credentials, const ClientOptions& options);

  // The "Authorization: ..." line for a request on `repository`, or "" before any
  // challenge. Fetches a new token first when the cached one has expired.
  std::string header_for(HttpSession& session, const std::string& repository);

  // After a 401 to a request that carried `used` (maybe ""): obtains new authorization from
  // the response's challenges. False when there is nothing new to try.
  bool refresh(HttpSession& session, const std::string& repository, const HttpResponse& unauthorized,
               const std::string& used);

  const std::optional<Credentials>& credentials() const { return credentials_; }
  // Token requests made so far (tests check refresh behaviour with it).
  int tokens_fetched() const;

 private:
  struct Token {
    std::string value;
    std::chrono::steady_clock::time_point renew_at;
  };
  enum class Mode { kNone, kBasic, kBearer };

  // "" for the registry itself (a login check): a token without repository access.
  std::string scope_for(const std::string& repository) const;
  std::string cached_header(const std::string& scope) const;  // mutex held
  void fetch_token(HttpSession& session, const std::string& repository, const std::string& scope);  // mutex held
  std::string basic_header() const;

  const std::string registry_;
  const std::optional<Credentials> credentials_;
  const ClientOptions& options_;
  mutable std::mutex mutex_;
  Mode mode_ = Mode::kNone;
  std::string realm_;
  std::string service_;
  std::map<std::string, Token> tokens_;
  int tokens_fetched_ = 0;
};

}  // namespace capsa::registry
