#pragma once
// An OCI distribution client for pulling: manifests (GET and HEAD) and blobs (into files,
// resumable, verified), for one registry. It takes plain strings — registry host[:port],
// repository ("library/busybox"), reference (tag or "sha256:…") — so it does not depend on
// the reference parser. Thread-safe: fetch_blobs() runs several transfers at once, each on
// its own libcurl handle.

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "registry/auth.hpp"
#include "registry/credentials.hpp"
#include "registry/http.hpp"
#include "registry/options.hpp"

namespace capsa::registry {

struct ManifestResponse {
  std::string bytes;       // exactly as received: hash these, never re-serialised JSON
  std::string media_type;  // Content-Type without parameters; an index or manifest type (oci/media_types.hpp)
  std::string digest;      // of `bytes`; equals the reference when pulling by digest
};

struct BlobTarget {
  std::string digest;                  // "sha256:…"
  // From the descriptor. Pass it: it is checked, and bounds what a registry can write.
  std::optional<std::uint64_t> size;
  std::string path;                    // written here; an existing file is resumed
};

// Bytes written so far and the expected total (when known). Called from the thread doing
// the transfer.
using ProgressFn = std::function<void(std::uint64_t done, std::optional<std::uint64_t> total)>;

class RegistryClient {
 public:
  // `registry` is host[:port] as the API is reached ("registry-1.docker.io", "127.0.0.1:5000").
  RegistryClient(std::string registry, ClientOptions options, std::optional<Credentials> credentials = std::nullopt);
  ~RegistryClient();
  RegistryClient(const RegistryClient&) = delete;
  RegistryClient& operator=(const RegistryClient&) = delete;

  ManifestResponse get_manifest(const std::string& repository, const std::string& reference);

  // The manifest digest without downloading it (Docker-Content-Digest of a HEAD; GET when
  // the registry does not send it). HEAD does not count against Docker Hub's pull limit.
  std::string head_manifest(const std::string& repository, const std::string& reference);

  // Downloads a blob to blob.path, resuming a partial file with Range and verifying size and
  // digest. On success blob.path holds exactly the blob (the caller publishes it); after a
  // network failure the partial file is kept for a later resume; after a digest mismatch
  // (retried once) it is removed.
  void fetch_blob(const std::string& repository, const BlobTarget& blob, const ProgressFn& progress = {},
                  const std::atomic<bool>* cancel = nullptr);

  // Up to options.parallel_downloads blobs at once. The first failure cancels the others and
  // is rethrown once every worker has stopped. progress(index, done, total) is called from
  // the workers. Setting *stop (e.g. capsa::interrupt_flag()) cancels every transfer within
  // a fraction of a second; partial files stay for a later resume.
  using BlobProgressFn = std::function<void(std::size_t index, std::uint64_t done, std::optional<std::uint64_t> total)>;
  void fetch_blobs(const std::string& repository, const std::vector<BlobTarget>& blobs,
                   const BlobProgressFn& progress = {}, const std::atomic<bool>* stop = nullptr);

  // --- Pushing (blob_upload.cpp) ---

  // Whether the registry has the blob (HEAD); an upload of it can then be skipped.
  bool has_blob(const std::string& repository, const std::string& digest);

  // Uploads `size` bytes of `fd` from offset 0 as the blob `digest`, by the distribution
  // spec's chunked upload: POST, then PATCH chunks of options.upload_chunk_bytes with
  // Content-Range, then PUT with the digest, which the registry verifies. After a dropped
  // connection or a 5xx the upload's status (GET) says from where to continue; an upload
  // the registry no longer knows starts again. progress(done, size) as chunks go out.
  void push_blob(const std::string& repository, int fd, std::uint64_t size, const std::string& digest,
                 const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

  // A small blob (a config) in one request: POST, then PUT with the bytes and digest.
  void push_small_blob(const std::string& repository, const std::string& bytes, const std::string& digest);

  // PUT of a manifest under `reference` (a tag): the registry publishes the tag only now,
  // so it never names content that is incomplete. Returns the manifest's digest.
  std::string put_manifest(const std::string& repository, const std::string& reference, const std::string& bytes,
                           const std::string& media_type);

  // `registry login`'s check: GET /v2/ with the credentials, through the registry's
  // challenge (a token without repository access, or Basic). Throws kUnauthorized when
  // they are refused.
  void check_login();

  const std::string& registry() const { return registry_; }
  const ClientOptions& options() const { return options_; }
  std::string base_url() const;  // "https://host[:port]"
  const Authenticator& authenticator() const { return auth_; }

 private:
  // A libcurl handle from the pool for the duration of one operation.
  class SessionLease {
   public:
    explicit SessionLease(RegistryClient& client) : client_(client), session_(client.take_session()) {}
    ~SessionLease() { client_.return_session(std::move(session_)); }
    SessionLease(const SessionLease&) = delete;
    SessionLease& operator=(const SessionLease&) = delete;
    HttpSession& operator*() { return *session_; }

   private:
    RegistryClient& client_;
    std::unique_ptr<HttpSession> session_;
  };
  std::unique_ptr<HttpSession> take_session();
  void return_session(std::unique_ptr<HttpSession> session);

  // One request with authorization; on a 401 obtains new authorization and retries once.
  HttpResponse send(HttpSession& session, const std::string& repository, HttpRequest request,
                    BodyConsumer* consumer = nullptr);
  // send() on a pooled handle, retrying 429/5xx and transient network errors; any status
  // but 200 after that is thrown as status_error().
  HttpResponse send_with_retries(const std::string& repository, const HttpRequest& request, const std::string& what,
                                 std::initializer_list<long> expected = {200});
  // The absolute URL of an upload's Location header.
  std::string upload_location(const HttpResponse& response, const std::string& what) const;
  struct UploadState;
  void start_upload(const std::string& repository, UploadState& upload);
  bool resume_upload(const std::string& repository, UploadState& upload);
  // One request for a blob into `fd` (blob_download.cpp).
  struct BlobAttempt;
  BlobAttempt blob_attempt(HttpSession& session, const std::string& repository, const BlobTarget& blob, int fd,
                              const ProgressFn& progress, const std::atomic<bool>* cancel);
  // A final (non-retriable or retries exhausted) HTTP failure as a one-line error.
  RegistryError status_error(const HttpResponse& response, const std::string& repository, const std::string& what) const;

  const std::string registry_;
  const ClientOptions options_;
  ShareHandle share_;
  Authenticator auth_;
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<HttpSession>> idle_sessions_;
};

}  // namespace capsa::registry
