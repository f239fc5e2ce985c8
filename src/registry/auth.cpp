#include "registry/auth.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "registry/base64.hpp"
#include "registry/challenge.hpp"

namespace capsa::registry {

namespace {

std::string escape(const std::string& text) {
  char* escaped = curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
  if (escaped == nullptr) throw Error("out of memory escaping a URL");
  std::string out(escaped);
  curl_free(escaped);
  return out;
}

// A token lifetime below the spec's minimum is taken as given (test registries use short
// ones); renewal starts a little before the end so a request does not race the expiry.
std::chrono::steady_clock::time_point renewal_time(long expires_in) {
  if (expires_in <= 0) expires_in = 60;  // token.md: default when absent
  const auto lifetime = std::chrono::milliseconds(expires_in * 1000);
  const auto margin = std::min<std::chrono::milliseconds>(std::chrono::seconds(10), lifetime / 4);
  return std::chrono::steady_clock::now() + lifetime - margin;
}

}  // namespace

RegistryError unauthorized_error(const std::string& registry, const std::string& repository,
                                 const std::optional<Credentials>& credentials) {
  if (credentials)
    return RegistryError(ErrorKind::kUnauthorized,
                         "401 Unauthorized from " + registry + " for " + repository +
                             ": check the username/password (they came from " + credentials->source +
                             "; set them with SINGULARITY_DOCKER_USERNAME/SINGULARITY_DOCKER_PASSWORD, "
                             "APPTAINER_DOCKER_USERNAME/APPTAINER_DOCKER_PASSWORD, --docker-login or docker login)");
  return RegistryError(ErrorKind::kUnauthorized,
                       "401 Unauthorized from " + registry + " for " + repository +
                           ": the repository does not exist or needs credentials (set "
                           "SINGULARITY_DOCKER_USERNAME/SINGULARITY_DOCKER_PASSWORD or use --docker-login)");
}

Authenticator::Authenticator(std::string registry, std::optional<Credentials> credentials, const ClientOptions& options)
    : registry_(std::move(registry)), credentials_(std::move(credentials)), options_(options) {}

std::string Authenticator::scope_for(const std::string& repository) const {
  if (repository.empty()) return "";
  return "repository:" + repository + (options_.push_access ? ":pull,push" : ":pull");
}

std::string Authenticator::basic_header() const {
  return "Authorization: Basic " + base64_encode(credentials_->username + ":" + credentials_->password);
}

std::string Authenticator::cached_header(const std::string& scope) const {
  if (mode_ == Mode::kBasic) return basic_header();
  if (mode_ != Mode::kBearer) return "";
  auto it = tokens_.find(scope);
  return it == tokens_.end() ? "" : "Authorization: Bearer " + it->second.value;
}

int Authenticator::tokens_fetched() const {
  std::lock_guard lock(mutex_);
  return tokens_fetched_;
}

std::string Authenticator::header_for(HttpSession& session, const std::string& repository) {
  std::lock_guard lock(mutex_);
  const std::string scope = scope_for(repository);
  if (mode_ == Mode::kBearer) {
    auto it = tokens_.find(scope);
    // Only repositories already challenged get a token proactively; others learn the
    // realm from their own first 401.
    if (it != tokens_.end() && std::chrono::steady_clock::now() >= it->second.renew_at)
      fetch_token(session, repository, scope);
  }
  return cached_header(scope);
}

bool Authenticator::refresh(HttpSession& session, const std::string& repository, const HttpResponse& unauthorized,
                            const std::string& used) {
  std::lock_guard lock(mutex_);
  const std::string scope = scope_for(repository);
  // Another thread renewed it while this request was in flight: just try again.
  const std::string current = cached_header(scope);
  if (!current.empty() && current != used) return true;

  const auto challenges = unauthorized.all_headers("www-authenticate");
  if (auto bearer = find_challenge(challenges, "bearer")) {
    if (bearer->param("realm").empty())
      throw RegistryError(ErrorKind::kProtocol, registry_ + " sent a Bearer challenge without a realm");
    mode_ = Mode::kBearer;
    realm_ = bearer->param("realm");
    service_ = bearer->param("service");
    // The challenge's scope is not reused: some registries put a placeholder there (B6).
    fetch_token(session, repository, scope);
    return true;
  }
  if (find_challenge(challenges, "basic")) {
    if (!credentials_ || credentials_->username.empty() || mode_ == Mode::kBasic) return false;
    mode_ = Mode::kBasic;
    return true;
  }
  return false;
}

void Authenticator::fetch_token(HttpSession& session, const std::string& repository, const std::string& scope) {
  HttpRequest request;
  std::string query;
  if (!service_.empty()) query += "service=" + escape(service_);
  if (!scope.empty()) query += (query.empty() ? "" : "&") + std::string("scope=") + escape(scope);
  if (credentials_ && !credentials_->identity_token.empty()) {
    // OAuth2 refresh-token grant (distribution token spec, "oauth.md").
    request.method = HttpRequest::Method::kPostForm;
    request.url = realm_;
    request.form_body = query + (query.empty() ? "" : "&") + "grant_type=refresh_token&client_id=capsa&refresh_token=" +
                        escape(credentials_->identity_token);
    request.headers.push_back("Content-Type: application/x-www-form-urlencoded");
  } else {
    request.url = realm_;
    if (!query.empty()) request.url += (realm_.find('?') == std::string::npos ? "?" : "&") + query;
    if (credentials_ && !credentials_->username.empty()) request.headers.push_back(basic_header());
  }
  request.max_body = 1 << 20;
  const HttpResponse response = session.perform(request);
  ++tokens_fetched_;
  if (response.status == 401 || response.status == 403) throw unauthorized_error(registry_, repository, credentials_);
  if (response.status != 200)
    throw RegistryError(ErrorKind::kServer, "token service " + url_host(realm_) + " for " + registry_ + " answered HTTP " +
                                                std::to_string(response.status));
  const auto reply = nlohmann::json::parse(response.body, nullptr, false);
  std::string token;
  if (reply.is_object()) {
    for (const char* field : {"token", "access_token"}) {
      if (auto it = reply.find(field); it != reply.end() && it->is_string() && !it->get<std::string>().empty()) {
        token = it->get<std::string>();
        break;
      }
    }
  }
  if (token.empty())
    throw RegistryError(ErrorKind::kProtocol,
                        "token service " + url_host(realm_) + " for " + registry_ + " answered without a token");
  long expires_in = 60;
  if (auto it = reply.find("expires_in"); it != reply.end() && it->is_number()) {
    // Clamped before converting: a hostile 1e300 must not overflow the conversion.
    expires_in = static_cast<long>(std::clamp(it->get<double>(), 0.0, 86400.0 * 365));
  }
  tokens_[scope] = Token{std::move(token), renewal_time(expires_in)};
}

}  // namespace capsa::registry
