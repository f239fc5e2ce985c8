#pragma once
// One HTTP(S) exchange at a time over a reused libcurl handle: TLS verified against the
// system CAs (plus ClientOptions::ca_file), redirects followed (at most 10) with libcurl's
// rule that a custom Authorization header is never sent to another host or port
// (CURLOPT_UNRESTRICTED_AUTH is never set), connect timeout and stall detection.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "registry/curl_handles.hpp"
#include "registry/errors.hpp"
#include "registry/options.hpp"

namespace capsa::registry {

// Part of an open file sent as a request body (a chunk of a blob upload).
struct FileSlice {
  int fd = -1;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

struct HttpRequest {
  // kPost, kPut and kPatch send `body`, or `body_file` when set; redirects are not
  // followed for them (an upload's Location is the client's to follow).
  // kDelete sends no body (the Library API's DELETE /v1/images/...).
  enum class Method { kGet, kHead, kPostForm, kPost, kPut, kPatch, kDelete };
  Method method = Method::kGet;
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string form_body;             // for kPostForm (application/x-www-form-urlencoded)
  std::string body;
  std::optional<FileSlice> body_file;
  // Called with the body bytes sent so far (uploads' progress).
  std::function<void(std::uint64_t sent)> on_sent;
  // Largest body kept in memory when no BodyConsumer is given; more is a protocol error.
  std::size_t max_body = 4 << 20;
  // When set and true, the transfer is aborted (RegistryError kCancelled).
  const std::atomic<bool>* cancel = nullptr;
  // False: a redirect is returned as it is (the Library API's 303 to its blob store,
  // which the client downloads from in ranged parts).
  bool follow_redirects = true;
};

struct HttpResponse {
  long status = 0;
  std::string effective_url;                                 // after redirects
  std::vector<std::pair<std::string, std::string>> headers;  // final response; names lower-case
  std::string body;  // whole body, or (with a consumer that declined it) the first 64 KiB
  // The transfer was stopped early: the consumer chose kAbort, or an error page was longer
  // than the 64 KiB kept of it.
  bool aborted_by_consumer = false;

  // First header of that name (case-insensitive), trimmed.
  std::optional<std::string> header(std::string_view name) const;
  std::vector<std::string> all_headers(std::string_view name) const;
};

// Receives the body of the final response as it arrives.
class BodyConsumer {
 public:
  enum class Decision { kStream, kCapture, kAbort };
  virtual ~BodyConsumer() = default;
  // Called once with status and headers before the first body byte (or after the transfer
  // when the body is empty). kCapture keeps the body in HttpResponse::body (an error page);
  // kAbort stops the transfer without an error.
  virtual Decision begin(const HttpResponse& head) = 0;
  // May throw; the transfer stops and the exception reaches the caller of perform().
  virtual void write(std::span<const char> data) = 0;
};

// A transport failure (no HTTP status): says whether trying again could help.
class TransportError : public RegistryError {
 public:
  TransportError(ErrorKind kind, const std::string& message, bool retriable)
      : RegistryError(kind, message), retriable_(retriable) {}
  bool retriable() const { return retriable_; }

 private:
  bool retriable_;
};

struct ContentRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::optional<std::uint64_t> total;  // "*" when unknown
};
// "bytes FIRST-LAST/TOTAL" (RFC 9110 §14.4); nullopt for anything else.
std::optional<ContentRange> parse_content_range(std::string_view value);

// Host[:port] of an http(s) URL, for messages.
std::string url_host(const std::string& url);

class HttpSession {
 public:
  // `share` (DNS and TLS session cache) may be null.
  HttpSession(const ClientOptions& options, ShareHandle* share);

  // Throws TransportError when no HTTP answer came; any HTTP status is returned.
  HttpResponse perform(const HttpRequest& request, BodyConsumer* consumer = nullptr);

 private:
  void configure(const HttpRequest& request, HeaderList& headers);
  const ClientOptions& options_;
  ShareHandle* share_;
  EasyHandle easy_;
};

}  // namespace capsa::registry
