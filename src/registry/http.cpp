#include "registry/http.hpp"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>

#include <unistd.h>

namespace capsa::registry {

namespace {

constexpr std::size_t kCapturedErrorBody = 64 << 10;

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// State of one perform() call, reached from libcurl's C callbacks.
struct Transfer {
  CURL* easy = nullptr;
  const HttpRequest* request = nullptr;
  BodyConsumer* consumer = nullptr;
  HttpResponse response;
  bool begun = false;
  BodyConsumer::Decision decision = BodyConsumer::Decision::kCapture;
  bool body_too_large = false;
  std::exception_ptr error;
  // Stall detection by "no byte for stall_seconds": libcurl's LOW_SPEED check averages over a
  // window of several seconds, so after a burst it notices a dead server only late.
  std::chrono::seconds stall_limit{0};
  curl_off_t last_received = -1;
  std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();
  bool stalled = false;
  std::uint64_t body_sent = 0;  // of request->body_file
  std::exception_ptr read_error;

  void begin() {
    begun = true;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &response.status);
    if (consumer != nullptr) decision = consumer->begin(response);
  }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  // Each response of a redirect chain (and any 1xx) starts with a status line: keep only
  // the headers of the last one.
  if (line.starts_with("HTTP/")) {
    transfer->response.headers.clear();
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    transfer->response.headers.emplace_back(lower(trim(line.substr(0, colon))),
                                            std::string(trim(line.substr(colon + 1))));
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  try {
    if (!transfer->begun) transfer->begin();
    switch (transfer->decision) {
      case BodyConsumer::Decision::kAbort:
        transfer->response.aborted_by_consumer = true;
        return 0;
      case BodyConsumer::Decision::kStream:
        transfer->consumer->write({data, bytes});
        return bytes;
      case BodyConsumer::Decision::kCapture: {
        auto& body = transfer->response.body;
        const size_t limit = transfer->consumer ? kCapturedErrorBody : transfer->request->max_body;
        if (body.size() + bytes > limit) {
          if (transfer->consumer) {  // an error page: its start is enough, the rest is not fetched
            body.append(data, limit - body.size());
            transfer->response.aborted_by_consumer = true;
            return 0;
          }
          transfer->body_too_large = true;
          return 0;
        }
        body.append(data, bytes);
        return bytes;
      }
    }
  } catch (...) {
    transfer->error = std::current_exception();
  }
  return 0;
}

// Supplies an upload body from its file slice.
size_t on_read(char* buffer, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const FileSlice& slice = *transfer->request->body_file;
  const std::uint64_t left = slice.length - transfer->body_sent;
  const auto want = static_cast<size_t>(std::min<std::uint64_t>(left, size * count));
  if (want == 0) return 0;
  ssize_t got = -1;
  do {
    got = ::pread(slice.fd, buffer, want, static_cast<off_t>(slice.offset + transfer->body_sent));
  } while (got < 0 && errno == EINTR);
  if (got <= 0) {
    transfer->read_error =
        std::make_exception_ptr(Error(got < 0 ? std::string("reading the file to upload: ") + std::strerror(errno)
                                              : std::string("the file to upload shrank while it was being sent")));
    return CURL_READFUNC_ABORT;
  }
  transfer->body_sent += static_cast<std::uint64_t>(got);
  return static_cast<size_t>(got);
}

// Lets libcurl send the body again (it does when a reused connection turns out closed).
int on_seek(void* user, curl_off_t offset, int origin) {
  auto* transfer = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<std::uint64_t>(offset) > transfer->request->body_file->length)
    return CURL_SEEKFUNC_CANTSEEK;
  transfer->body_sent = static_cast<std::uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

int on_progress(void* user, curl_off_t, curl_off_t received, curl_off_t, curl_off_t sent) {
  auto* transfer = static_cast<Transfer*>(user);
  const auto* cancel = transfer->request->cancel;
  if (cancel != nullptr && cancel->load()) return 1;
  if (transfer->request->on_sent && sent > 0) transfer->request->on_sent(static_cast<std::uint64_t>(sent));
  const auto now = std::chrono::steady_clock::now();
  if (received + sent != transfer->last_received) {
    transfer->last_received = received + sent;
    transfer->last_activity = now;
  } else if (transfer->stall_limit.count() > 0 && now - transfer->last_activity > transfer->stall_limit) {
    transfer->stalled = true;
    return 1;
  }
  return 0;
}

// Adds options.ca_file to the system trust store instead of replacing it (CURLOPT_CAINFO
// would replace the system bundle, breaking every public registry at a site with a private one).
CURLcode add_extra_ca(CURL*, void* ssl_ctx, void* ca_file) {
  X509_STORE* store = SSL_CTX_get_cert_store(static_cast<SSL_CTX*>(ssl_ctx));
  if (X509_STORE_load_file(store, static_cast<const char*>(ca_file)) != 1) return CURLE_SSL_CACERT_BADFILE;
  return CURLE_OK;
}

TransportError transport_error(CURLcode code, const std::string& host, const char* detail) {
  std::string why = (detail != nullptr && *detail != '\0') ? detail : curl_easy_strerror(code);
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return {ErrorKind::kUnreachable, "registry " + host + " is unreachable: cannot resolve its name (" + why + ")",
              false};
    case CURLE_COULDNT_CONNECT:
      return {ErrorKind::kUnreachable, "registry " + host + " is unreachable: " + why, true};
    case CURLE_OPERATION_TIMEDOUT:
      return {ErrorKind::kStalled,
              "registry " + host + " did not answer in time: " + why,
              true};
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      return {ErrorKind::kTls,
              "TLS failure talking to " + host + ": " + why +
                  "; if the registry uses a private CA, set CAPSA_REGISTRY_CA=/path/to/ca.pem "
                  "(or use --nohttps for a plain-HTTP registry)",
              false};
    case CURLE_UNSUPPORTED_PROTOCOL:
      return {ErrorKind::kProtocol,
              "refusing a non-HTTPS URL from " + host + " (" + why + "); use --nohttps for a plain-HTTP registry",
              false};
    case CURLE_TOO_MANY_REDIRECTS:
      return {ErrorKind::kProtocol, "too many redirects from " + host, false};
    case CURLE_ABORTED_BY_CALLBACK:
      return {ErrorKind::kCancelled, "transfer from " + host + " cancelled", false};
    default:
      return {ErrorKind::kServer, "transfer from " + host + " failed: " + why, true};
  }
}

// distribution's 416 answer declares the blob's length as Content-Length but sends a short
// error text, so the transfer "fails" after a complete status line. An error status is all
// that matters then; retrying the same request would fail the same way.
bool error_page_cut_short(CURL* easy, CURLcode code) {
  if (code != CURLE_PARTIAL_FILE && code != CURLE_RECV_ERROR) return false;
  long status = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
  return status >= 400;
}

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  const std::string wanted = lower(name);
  for (const auto& [key, value] : headers)
    if (key == wanted) return value;
  return std::nullopt;
}

std::vector<std::string> HttpResponse::all_headers(std::string_view name) const {
  const std::string wanted = lower(name);
  std::vector<std::string> values;
  for (const auto& [key, value] : headers)
    if (key == wanted) values.push_back(value);
  return values;
}

std::optional<ContentRange> parse_content_range(std::string_view value) {
  if (!value.starts_with("bytes ")) return std::nullopt;
  value.remove_prefix(6);
  ContentRange range;
  auto read = [&](std::uint64_t& number, char stop) {
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end == value.data()) return false;
    value.remove_prefix(static_cast<size_t>(end - value.data()));
    if (stop == '\0') return value.empty();
    if (value.empty() || value.front() != stop) return false;
    value.remove_prefix(1);
    return true;
  };
  if (!read(range.first, '-') || !read(range.last, '/') || range.last < range.first) return std::nullopt;
  if (value != "*") {
    std::uint64_t total = 0;
    if (!read(total, '\0') || total <= range.last) return std::nullopt;
    range.total = total;
  }
  return range;
}

std::string url_host(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of("/?#", start);
  std::string host = url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  // Never echo userinfo, should a URL carry any.
  if (auto at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  return host;
}

namespace {

void configure_upload(CURL* easy, const HttpRequest& request) {
  const char* verb = request.method == HttpRequest::Method::kPost  ? "POST"
                     : request.method == HttpRequest::Method::kPut ? "PUT"
                                                                   : "PATCH";
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  if (request.body_file) {
    curl_easy_setopt(easy, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(easy, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body_file->length));
  } else {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, verb);
}

}  // namespace

HttpSession::HttpSession(const ClientOptions& options, ShareHandle* share)
    : options_(options), share_(share), easy_(make_easy_handle()) {}

void HttpSession::configure(const HttpRequest& request, HeaderList& headers) {
  CURL* easy = easy_.get();
  // reset keeps the connection cache, so consecutive requests reuse connections.
  curl_easy_reset(easy);
  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  const char* protocols = options_.insecure_http ? "http,https" : "https";
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, protocols);
  curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, request.follow_redirects ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options_.skip_tls_verify ? 0L : 1L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options_.skip_tls_verify ? 0L : 2L);
  use_system_ca_bundle(easy);
  if (!options_.ca_file.empty()) {
    curl_easy_setopt(easy, CURLOPT_SSL_CTX_FUNCTION, &add_extra_ca);
    curl_easy_setopt(easy, CURLOPT_SSL_CTX_DATA, options_.ca_file.c_str());
  }
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, options_.stall_bytes_per_second);
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, options_.stall_seconds);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "capsa");
  if (share_ != nullptr) curl_easy_setopt(easy, CURLOPT_SHARE, share_->get());
  switch (request.method) {
    case HttpRequest::Method::kGet:
      curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
      break;
    case HttpRequest::Method::kHead:
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
      break;
    case HttpRequest::Method::kDelete:
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "DELETE");
      curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
      break;
    case HttpRequest::Method::kPostForm:
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.form_body.c_str());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.form_body.size()));
      break;
    case HttpRequest::Method::kPost:
    case HttpRequest::Method::kPut:
    case HttpRequest::Method::kPatch:
      configure_upload(easy, request);
      // One round trip less, and no waiting for a 100 Continue some proxies never send.
      headers.append("Expect:");
      break;
  }
  for (const auto& line : request.headers) headers.append(line);
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get());
}

HttpResponse HttpSession::perform(const HttpRequest& request, BodyConsumer* consumer) {
  HeaderList headers;
  configure(request, headers);
  Transfer transfer;
  transfer.easy = easy_.get();
  transfer.request = &request;
  transfer.consumer = consumer;
  transfer.stall_limit = std::chrono::seconds(options_.stall_seconds);
  char error_buffer[CURL_ERROR_SIZE] = {};
  CURL* easy = easy_.get();
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &on_progress);
  curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &transfer);
  if (request.body_file) {
    curl_easy_setopt(easy, CURLOPT_READFUNCTION, &on_read);
    curl_easy_setopt(easy, CURLOPT_READDATA, &transfer);
    curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, &on_seek);
    curl_easy_setopt(easy, CURLOPT_SEEKDATA, &transfer);
  }

  const CURLcode code = curl_easy_perform(easy);
  // The handle is reused: drop pointers into this stack frame.
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);

  if (transfer.error) std::rethrow_exception(transfer.error);
  if (transfer.read_error) std::rethrow_exception(transfer.read_error);
  const std::string host = url_host(request.url);
  if (transfer.body_too_large)
    throw RegistryError(ErrorKind::kProtocol, "answer from " + host + " is larger than " +
                                                  std::to_string(request.max_body) + " bytes");
  if (transfer.stalled)
    throw TransportError(ErrorKind::kStalled,
                         "registry " + host + " stopped sending (no data for " + std::to_string(options_.stall_seconds) + " s)",
                         true);
  if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && transfer.response.aborted_by_consumer) &&
      !error_page_cut_short(easy, code))
    throw transport_error(code, host, error_buffer);
  char* effective = nullptr;
  curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &effective);
  if (effective != nullptr) transfer.response.effective_url = effective;
  if (!transfer.begun) transfer.begin();
  return std::move(transfer.response);
}

}  // namespace capsa::registry
