#include "registry/client.hpp"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "oci/digest.hpp"
#include "oci/media_types.hpp"
#include "registry/backoff.hpp"
#include "registry/challenge.hpp"
#include "registry/json_fields.hpp"

namespace capsa::registry {

namespace {

// Tags cannot contain ':' (B1), digests always do.
bool is_digest_reference(std::string_view reference) { return reference.find(':') != std::string_view::npos; }


std::string media_type_of(const HttpResponse& response) {
  std::string type = response.header("content-type").value_or("");
  if (auto semicolon = type.find(';'); semicolon != std::string::npos) type.erase(semicolon);
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return type;
}

bool is_supported_manifest(const std::string& type) { return oci::is_index_type(type) || oci::is_manifest_type(type); }

// The spec's {"errors":[{"code","message"}]} body, when the body is that (nvcr.io sends HTML).
std::string registry_error_detail(const HttpResponse& response) {
  const auto body = nlohmann::json::parse(response.body, nullptr, false);
  if (!body.is_object() || !body.contains("errors") || !body["errors"].is_array() || body["errors"].empty()) return "";
  const auto& first = body["errors"][0];
  if (!first.is_object()) return "";
  std::string detail = string_field(first, "code");
  const std::string message = string_field(first, "message");
  if (!message.empty()) detail += (detail.empty() ? "" : ": ") + message;
  if (detail.size() > 200) detail = detail.substr(0, 200) + "…";
  // Server text goes to a terminal: no control characters (escape sequences, newlines).
  for (char& c : detail)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return detail;
}

}  // namespace

RegistryClient::RegistryClient(std::string registry, ClientOptions options, std::optional<Credentials> credentials)
    : registry_(std::move(registry)), options_(std::move(options)), auth_(registry_, std::move(credentials), options_) {}

RegistryClient::~RegistryClient() = default;

std::string RegistryClient::base_url() const { return (options_.insecure_http ? "http://" : "https://") + registry_; }

std::unique_ptr<HttpSession> RegistryClient::take_session() {
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_sessions_.empty()) {
      auto session = std::move(idle_sessions_.back());
      idle_sessions_.pop_back();
      return session;
    }
  }
  return std::make_unique<HttpSession>(options_, &share_);
}

void RegistryClient::return_session(std::unique_ptr<HttpSession> session) {
  std::lock_guard lock(pool_mutex_);
  idle_sessions_.push_back(std::move(session));
}

HttpResponse RegistryClient::send(HttpSession& session, const std::string& repository, HttpRequest request,
                                  BodyConsumer* consumer) {
  const auto plain_headers = request.headers;
  // An upload's Location may name another host: credentials go to the registry only.
  const bool to_registry = url_host(request.url) == registry_;
  for (bool refreshed = false;; refreshed = true) {
    const std::string authorization = to_registry ? auth_.header_for(session, repository) : "";
    request.headers = plain_headers;
    if (!authorization.empty()) request.headers.push_back(authorization);
    HttpResponse response = session.perform(request, consumer);
    if (response.status != 401) return response;
    // A token can expire mid-pull (multi-GB layers outlive 60-300 s tokens): renew once.
    if (refreshed || !auth_.refresh(session, repository, response, authorization)) {
      // A token the service issued, refused for what it does not cover (RFC 6750 §3.1).
      const auto bearer = find_challenge(response.all_headers("www-authenticate"), "bearer");
      if (refreshed && bearer && bearer->param("error") == "insufficient_scope")
        throw RegistryError(ErrorKind::kUnauthorized,
                            "401 Unauthorized from " + registry_ + " for " + repository + ": the credentials" +
                                (auth_.credentials() ? " from " + auth_.credentials()->source : std::string()) +
                                " do not grant " + (options_.push_access ? "push" : "pull") + " access");
      throw unauthorized_error(registry_, repository, auth_.credentials());
    }
  }
}

RegistryError RegistryClient::status_error(const HttpResponse& response, const std::string& repository,
                                           const std::string& what) const {
  const std::string detail = registry_error_detail(response);
  const std::string suffix = detail.empty() ? "" : " (" + detail + ")";
  const std::string status = std::to_string(response.status);
  if (response.status == 404)
    return {ErrorKind::kNotFound, what + " not found in " + registry_ + "/" + repository + ": HTTP 404" + suffix};
  if (response.status == 403)
    return {ErrorKind::kUnauthorized, "403 Forbidden from " + registry_ + " for " + repository + suffix +
                                          (options_.push_access ? ": the credentials do not grant push access"
                                                                : ": the credentials do not grant pull access")};
  if (response.status == 429)
    return {ErrorKind::kServer, registry_ + " keeps answering 429 Too Many Requests for " + what + suffix +
                                    ": the pull rate limit is exhausted; log in or try again later"};
  if (response.status >= 500)
    return {ErrorKind::kServer, registry_ + " answered HTTP " + status + " for " + what + suffix};
  return {ErrorKind::kProtocol, registry_ + " answered HTTP " + status + " for " + what + suffix};
}

HttpResponse RegistryClient::send_with_retries(const std::string& repository, const HttpRequest& request,
                                               const std::string& what, std::initializer_list<long> expected) {
  SessionLease session(*this);
  Backoff backoff(options_, request.cancel);
  for (;;) {
    HttpResponse response;
    try {
      response = send(*session, repository, request);
    } catch (const TransportError& e) {
      if (e.retriable() && backoff.wait(e.what())) continue;
      throw;
    }
    if (is_retriable_status(response.status) &&
        backoff.wait(registry_ + " answered HTTP " + std::to_string(response.status) + " for " + what,
                     retry_after(response)))
      continue;
    if (std::find(expected.begin(), expected.end(), response.status) == expected.end())
      throw status_error(response, repository, what);
    return response;
  }
}

namespace {

std::string manifest_name(const std::string& repository, const std::string& reference) {
  return "manifest " + repository + (is_digest_reference(reference) ? "@" : ":") + reference;
}

HttpRequest manifest_request(const std::string& base_url, const std::string& repository, const std::string& reference,
                             HttpRequest::Method method) {
  HttpRequest request;
  request.method = method;
  request.url = base_url + "/v2/" + repository + "/manifests/" + reference;
  request.headers = {"Accept: " + std::string(oci::kManifestAccept)};
  return request;
}

void check_media_type(const std::string& type, const std::string& what) {
  if (type.starts_with("application/vnd.docker.distribution.manifest.v1+"))
    throw RegistryError(ErrorKind::kUnsupportedMediaType,
                        what + " is a Docker schema 1 manifest (" + type +
                            "), which capsa does not support; re-push the image with a current docker or skopeo");
  if (!is_supported_manifest(type))
    throw RegistryError(ErrorKind::kUnsupportedMediaType, what + " has the unsupported media type '" + type + "'");
}

// B2: the bytes must hash to the digest asked for; Docker-Content-Digest, when it uses the
// same algorithm, must agree too (it is optional on old registries).
std::string verified_digest(const HttpResponse& response, const std::string& reference, const std::string& what) {
  const bool by_digest = is_digest_reference(reference);
  const std::string digest =
      oci::Digest::compute(by_digest ? oci::Digest::parse(reference).algorithm() : "sha256", response.body).to_string();
  if (by_digest && digest != reference)
    throw RegistryError(ErrorKind::kDigestMismatch,
                        what + " has digest " + digest + ": the registry sent other content than asked for");
  const std::string prefix = digest.substr(0, digest.find(':') + 1);
  if (auto advertised = response.header("docker-content-digest");
      advertised && advertised->starts_with(prefix) && *advertised != digest)
    throw RegistryError(ErrorKind::kDigestMismatch,
                        what + " hashes to " + digest + " but the registry says " + *advertised);
  return digest;
}

}  // namespace

ManifestResponse RegistryClient::get_manifest(const std::string& repository, const std::string& reference) {
  const std::string what = manifest_name(repository, reference);
  const std::string from = what + " from " + registry_;
  HttpResponse response =
      send_with_retries(repository, manifest_request(base_url(), repository, reference, HttpRequest::Method::kGet), what);
  ManifestResponse manifest;
  manifest.media_type = media_type_of(response);
  check_media_type(manifest.media_type, from);
  manifest.digest = verified_digest(response, reference, from);
  manifest.bytes = std::move(response.body);
  return manifest;
}

std::string RegistryClient::head_manifest(const std::string& repository, const std::string& reference) {
  const std::string what = manifest_name(repository, reference);
  const HttpResponse response =
      send_with_retries(repository, manifest_request(base_url(), repository, reference, HttpRequest::Method::kHead), what);
  if (auto digest = response.header("docker-content-digest"); digest && !digest->empty()) {
    oci::Digest::parse(*digest);  // a malformed header is an error, not a cache key
    return *digest;
  }
  return get_manifest(repository, reference).digest;
}

void RegistryClient::check_login() {
  HttpRequest request;
  request.url = base_url() + "/v2/";
  send_with_retries("", request, "the API root /v2/");
}

void RegistryClient::fetch_blobs(const std::string& repository, const std::vector<BlobTarget>& blobs,
                                 const BlobProgressFn& progress, const std::atomic<bool>* stop) {
  std::atomic<bool> cancel{false};
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  auto worker = [&] {
    for (std::size_t index = next++; index < blobs.size() && !cancel.load(); index = next++) {
      try {
        ProgressFn blob_progress;
        if (progress) blob_progress = [&, index](std::uint64_t done, std::optional<std::uint64_t> total) {
          progress(index, done, total);
        };
        fetch_blob(repository, blobs[index], blob_progress, &cancel);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        cancel = true;
      }
    }
  };
  const std::size_t count = std::min<std::size_t>(blobs.size(), static_cast<std::size_t>(std::max(1, options_.parallel_downloads)));
  {
    // *stop is set by a signal handler, which can only store to an atomic (no notify), so
    // it is polled here and forwarded to the flag the transfers and backoffs watch.
    std::atomic<bool> workers_done{false};
    std::jthread watcher;
    if (stop != nullptr) watcher = std::jthread([&] {
      while (!workers_done.load() && !cancel.load()) {
        if (stop->load()) cancel = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    {
      std::vector<std::jthread> workers;
      for (std::size_t i = 0; i < count; ++i) workers.emplace_back(worker);
    }  // workers join here
    workers_done = true;
  }  // the watcher joins here
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace capsa::registry
