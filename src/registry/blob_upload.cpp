// RegistryClient's push side: blob uploads (distribution spec, "Pushing blobs": POST, PATCH
// chunks with Content-Range, PUT with the digest), resumed from the upload's status after a
// failure, and the manifest PUT that publishes a tag.
#include <algorithm>
#include <charconv>

#include "oci/digest.hpp"
#include "registry/backoff.hpp"
#include "registry/client.hpp"

namespace capsa::registry {

struct RegistryClient::UploadState {
  std::string location;      // absolute URL of the upload session, as last given
  std::uint64_t offset = 0;  // bytes the registry holds
};

namespace {

char* escape_raw(const std::string& text) {
  return curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size()));
}

std::string with_digest(const std::string& location, const std::string& digest) {
  char* escaped = escape_raw(digest);
  if (escaped == nullptr) throw Error("out of memory escaping a URL");
  std::string url = location + (location.find('?') == std::string::npos ? "?" : "&") + "digest=" + escaped;
  curl_free(escaped);
  return url;
}

// The end of a "Range: 0-N" header (inclusive) plus one: how many bytes the registry
// holds. distribution writes "0-0" for an empty upload too, so it is taken as nothing.
std::optional<std::uint64_t> held_bytes(const HttpResponse& response) {
  const std::string range = response.header("range").value_or("");
  std::string_view text = range;
  if (text.starts_with("bytes=")) text.remove_prefix(6);
  if (!text.starts_with("0-")) return std::nullopt;
  text.remove_prefix(2);
  std::uint64_t last = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), last);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return last == 0 ? 0 : last + 1;
}

}  // namespace

std::string RegistryClient::upload_location(const HttpResponse& response, const std::string& what) const {
  std::string location = response.header("location").value_or("");
  if (location.starts_with("http://") || location.starts_with("https://")) return location;
  if (location.starts_with("/")) return base_url() + location;
  throw RegistryError(ErrorKind::kProtocol,
                      registry_ + " answered the " + what + " without a usable Location for the upload");
}

bool RegistryClient::has_blob(const std::string& repository, const std::string& digest) {
  HttpRequest request;
  request.method = HttpRequest::Method::kHead;
  request.url = base_url() + "/v2/" + repository + "/blobs/" + digest;
  return send_with_retries(repository, request, "blob " + digest, {200, 404}).status == 200;
}

void RegistryClient::start_upload(const std::string& repository, UploadState& upload) {
  HttpRequest request;
  request.method = HttpRequest::Method::kPost;
  request.url = base_url() + "/v2/" + repository + "/blobs/uploads/";
  const HttpResponse response = send_with_retries(repository, request, "start of a blob upload", {202});
  upload.location = upload_location(response, "start of a blob upload");
  upload.offset = 0;
}

bool RegistryClient::resume_upload(const std::string& repository, UploadState& upload) {
  HttpRequest request;
  request.url = upload.location;
  try {
    SessionLease session(*this);
    const HttpResponse response = send(*session, repository, request);
    if (response.status != 204) return false;
    const auto held = held_bytes(response);
    if (!held) return false;
    upload.offset = *held;
    if (response.header("location")) upload.location = upload_location(response, "upload status");
    return true;
  } catch (const TransportError&) {
    return false;
  }
}

void RegistryClient::push_blob(const std::string& repository, int fd, std::uint64_t size, const std::string& digest,
                               const ProgressFn& progress, const std::atomic<bool>* cancel) {
  const std::string what = "upload of blob " + digest;
  Backoff backoff(options_, cancel);
  UploadState upload;
  start_upload(repository, upload);
  // After a failure: wait, then continue where the registry says it is, or start over.
  auto recover = [&](const std::string& reason, std::optional<std::chrono::milliseconds> wait,
                     const std::function<void()>& give_up) {
    if (!backoff.wait(reason, wait)) give_up();
    if (resume_upload(repository, upload)) {
      if (options_.log) options_.log("resuming the " + what + " at byte " + std::to_string(upload.offset));
      return;
    }
    if (options_.log) options_.log(registry_ + " lost the " + what + "; starting it again");
    start_upload(repository, upload);
  };
  SessionLease session(*this);
  for (;;) {
    const bool last_step = upload.offset >= size;
    HttpRequest request;
    request.cancel = cancel;
    request.headers = {"Content-Type: application/octet-stream"};
    if (last_step) {
      request.method = HttpRequest::Method::kPut;
      request.url = with_digest(upload.location, digest);
    } else {
      const std::uint64_t length = std::min(options_.upload_chunk_bytes, size - upload.offset);
      request.method = HttpRequest::Method::kPatch;
      request.url = upload.location;
      request.headers.push_back("Content-Range: " + std::to_string(upload.offset) + "-" +
                                std::to_string(upload.offset + length - 1));
      request.body_file = FileSlice{fd, upload.offset, length};
      if (progress) request.on_sent = [&, start = upload.offset](std::uint64_t sent) { progress(start + sent, size); };
    }
    HttpResponse response;
    try {
      response = send(*session, repository, request);
    } catch (const TransportError& e) {
      if (!e.retriable()) throw;
      recover(e.what(), std::nullopt, [&] { throw e; });
      continue;
    }
    if (last_step && response.status == 201) {
      if (progress) progress(size, size);
      return;
    }
    if (!last_step && response.status == 202) {
      const std::uint64_t sent = request.body_file->length;
      upload.location = upload_location(response, what);
      upload.offset = held_bytes(response).value_or(upload.offset + sent);
      if (progress) progress(upload.offset, size);
      continue;
    }
    if (last_step && response.status == 400 && response.body.find("DIGEST_INVALID") != std::string::npos) {
      std::string message = registry_;
      message.append(" received other content than ").append(digest).append(" for the ").append(what);
      message += "; did the file change meanwhile?";
      throw RegistryError(ErrorKind::kDigestMismatch, message);
    }
    // 416: the registry holds another length than this client thought; 404: it lost the
    // upload; 5xx/429: a transient failure.
    if (response.status == 416 || response.status == 404 || is_retriable_status(response.status)) {
      const RegistryError error = status_error(response, repository, what);
      recover(error.what(), retry_after(response), [&] { throw error; });
      continue;
    }
    throw status_error(response, repository, what);
  }
}

void RegistryClient::push_small_blob(const std::string& repository, const std::string& bytes,
                                     const std::string& digest) {
  UploadState upload;
  start_upload(repository, upload);
  HttpRequest request;
  request.method = HttpRequest::Method::kPut;
  request.url = with_digest(upload.location, digest);
  request.headers = {"Content-Type: application/octet-stream"};
  request.body = bytes;
  send_with_retries(repository, request, "upload of blob " + digest, {201});
}

std::string RegistryClient::put_manifest(const std::string& repository, const std::string& reference,
                                         const std::string& bytes, const std::string& media_type) {
  std::string digest = oci::Digest::compute("sha256", bytes).to_string();
  HttpRequest request;
  request.method = HttpRequest::Method::kPut;
  request.url = base_url() + "/v2/" + repository + "/manifests/" + reference;
  request.headers = {"Content-Type: " + media_type};
  request.body = bytes;
  const HttpResponse response =
      send_with_retries(repository, request, "manifest " + repository + ":" + reference, {200, 201});
  if (auto advertised = response.header("docker-content-digest");
      advertised && advertised->starts_with("sha256:") && *advertised != digest)
    throw RegistryError(ErrorKind::kDigestMismatch, registry_ + " stored manifest " + repository + ":" + reference +
                                                        " as " + *advertised + " but it hashes to " + digest);
  return digest;
}

}  // namespace capsa::registry
