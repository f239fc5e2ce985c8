// RegistryClient::fetch_blob: one blob into a file, resumable and verified (B5).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <exception>
#include <memory>

#include "registry/backoff.hpp"
#include "registry/client.hpp"
#include "oci/digest.hpp"
#include "util/fd.hpp"

namespace capsa::registry {

namespace {

// Feeds the first `length` bytes of a partial download to `hasher`, so that a resumed
// transfer is verified over the whole blob.
void hash_file_prefix(oci::Hasher& hasher, int fd, std::uint64_t length) {
  std::vector<char> buffer(1 << 20);
  std::uint64_t offset = 0;
  while (offset < length) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), length - offset));
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got < 0) throw_errno("reading a partial download to resume it");
    if (got == 0) throw Error("partial download shrank while resuming it");
    hasher.update(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    offset += static_cast<std::uint64_t>(got);
  }
}


// Writes the body into the file at the resume offset and hashes it on the way.
class BlobWriter : public BodyConsumer {
 public:
  BlobWriter(int fd, std::uint64_t offset, std::unique_ptr<oci::Hasher> hasher, const BlobTarget& blob,
             const std::string& where, const ProgressFn& progress, const ClientOptions& options)
      : fd_(fd), offset_(offset), hasher_(std::move(hasher)), blob_(blob), where_(where), progress_(progress),
        options_(options) {}

  Decision begin(const HttpResponse& head) override {
    if (head.status == 206) {
      auto range = parse_content_range(head.header("content-range").value_or(""));
      if (!range || range->first != offset_ || (blob_.size && range->total && *range->total != *blob_.size)) {
        range_mismatch_ = true;
        return Decision::kAbort;
      }
      return Decision::kStream;
    }
    if (head.status == 200) {
      if (offset_ > 0) {
        // The server ignored Range: never append a whole body to the partial file (B5).
        if (options_.log) options_.log(where_ + " ignored the Range request; downloading " + blob_.digest + " from the start");
        restart();
      }
      return Decision::kStream;
    }
    return Decision::kCapture;
  }

  void write(std::span<const char> data) override {
    if (blob_.size && offset_ + data.size() > *blob_.size)
      throw RegistryError(ErrorKind::kProtocol, where_ + " sent more than the " + std::to_string(*blob_.size) +
                                                    " bytes of blob " + blob_.digest);
    with_context("writing " + blob_.path, [&] {  // "No space left" must say where
      write_all_at(fd_, {reinterpret_cast<const std::uint8_t*>(data.data()), data.size()}, offset_);
    });
    hasher_->update(std::string_view(data.data(), data.size()));
    offset_ += data.size();
    if (progress_) progress_(offset_, blob_.size);
  }

  void restart() {
    truncate_file(fd_);
    offset_ = 0;
    hasher_ = std::make_unique<oci::Hasher>(oci::Digest::parse(blob_.digest).algorithm());
  }

  static void truncate_file(int fd) {
    if (::ftruncate(fd, 0) != 0) throw_errno("truncating a partial download");
  }

  bool range_mismatch() const { return range_mismatch_; }
  std::uint64_t offset() const { return offset_; }
  std::string finish() { return hasher_->finish().to_string(); }

 private:
  int fd_;
  std::uint64_t offset_;
  std::unique_ptr<oci::Hasher> hasher_;
  const BlobTarget& blob_;
  const std::string& where_;
  const ProgressFn& progress_;
  const ClientOptions& options_;
  bool range_mismatch_ = false;
};

// What the file already holds: its length and the running hash of those bytes (re-hashing
// on resume is cheap next to the network, and keeps verification end to end).
struct ResumePoint {
  std::uint64_t have = 0;
  std::unique_ptr<oci::Hasher> hasher;
};

ResumePoint resume_point(int fd, const BlobTarget& blob) {
  ResumePoint point;
  point.have = file_size(fd);
  if (blob.size && point.have > *blob.size) {
    BlobWriter::truncate_file(fd);
    point.have = 0;
  }
  point.hasher = std::make_unique<oci::Hasher>(oci::Digest::parse(blob.digest).algorithm());
  hash_file_prefix(*point.hasher, fd, point.have);
  return point;
}

bool holds_blob(int fd, const BlobTarget& blob) {
  ResumePoint point = resume_point(fd, blob);
  return (!blob.size || point.have == *blob.size) && point.hasher->finish().to_string() == blob.digest;
}

}  // namespace

// The result of one request for the blob.
struct RegistryClient::BlobAttempt {
  enum class Outcome { kDone, kRetry, kDigestMismatch } outcome = Outcome::kRetry;
  std::string reason;  // why a retry is needed (for the log and the final error)
  ErrorKind failure = ErrorKind::kServer;
  std::optional<std::chrono::milliseconds> wait;  // Retry-After

  static BlobAttempt ended(Outcome outcome) {
    BlobAttempt attempt;
    attempt.outcome = outcome;
    return attempt;
  }
};

// One request for the blob, resuming from what the file holds. Each attempt starts at the
// registry URL, so an expired pre-signed redirect is renewed.
RegistryClient::BlobAttempt RegistryClient::blob_attempt(HttpSession& session, const std::string& repository, const BlobTarget& blob,
                                     int fd, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  const std::string where = registry_ + "/" + repository;
  const std::string what = "blob " + blob.digest;
  ResumePoint point = resume_point(fd, blob);
  if (blob.size && point.have == *blob.size && point.have > 0) {
    if (point.hasher->finish().to_string() == blob.digest) return BlobAttempt::ended(BlobAttempt::Outcome::kDone);  // finished by an earlier run
    BlobWriter::truncate_file(fd);
    return BlobAttempt::ended(BlobAttempt::Outcome::kDigestMismatch);
  }
  HttpRequest request;
  request.url = base_url() + "/v2/" + repository + "/blobs/" + blob.digest;
  request.cancel = cancel;
  if (point.have > 0) request.headers.push_back("Range: bytes=" + std::to_string(point.have) + "-");
  BlobWriter writer(fd, point.have, std::move(point.hasher), blob, where, progress, options_);
  BlobAttempt attempt;
  try {
    const HttpResponse response = send(session, repository, request, &writer);
    if (writer.range_mismatch()) {
      attempt.reason = where + " answered a Range request for " + what + " with a different Content-Range";
      BlobWriter::truncate_file(fd);
    } else if (response.status == 416) {
      // "Range not satisfiable": the file may already be complete, else start over (B5).
      if (holds_blob(fd, blob)) return BlobAttempt::ended(BlobAttempt::Outcome::kDone);
      attempt.reason = where + " refused the resume point of " + what;
      BlobWriter::truncate_file(fd);
    } else if (response.status == 200 || response.status == 206) {
      if (blob.size && writer.offset() != *blob.size) {
        attempt.reason = where + " ended " + what + " after " + std::to_string(writer.offset()) + " of " +
                         std::to_string(*blob.size) + " bytes";
      } else {
        attempt.outcome = writer.finish() == blob.digest ? BlobAttempt::Outcome::kDone : BlobAttempt::Outcome::kDigestMismatch;
      }
    } else if (is_retriable_status(response.status)) {
      attempt.reason = where + " answered HTTP " + std::to_string(response.status) + " for " + what;
      attempt.wait = retry_after(response);
    } else {
      throw status_error(response, repository, what);
    }
  } catch (const TransportError& e) {
    if (!e.retriable()) throw;
    attempt.reason = e.what();
    attempt.failure = e.kind();
  }
  return attempt;
}

void RegistryClient::fetch_blob(const std::string& repository, const BlobTarget& blob, const ProgressFn& progress,
                                const std::atomic<bool>* cancel) {
  oci::Digest::parse(blob.digest);
  const std::string what = "blob " + blob.digest + " from " + registry_ + "/" + repository;
  UniqueFd file = open_file(blob.path, O_RDWR | O_CREAT, 0644);
  // A failure keeps partial data for a later resume, but not an empty file.
  struct RemoveIfEmpty {
    const std::string& path;
    int fd;
    ~RemoveIfEmpty() {
      struct stat st {};
      if (std::uncaught_exceptions() > 0 && ::fstat(fd, &st) == 0 && st.st_size == 0) ::unlink(path.c_str());
    }
  } cleanup{blob.path, file.get()};
  SessionLease session(*this);
  Backoff backoff(options_, cancel);
  bool mismatch_retried = false;
  for (;;) {
    const BlobAttempt attempt = blob_attempt(*session, repository, blob, file.get(), progress, cancel);
    switch (attempt.outcome) {
      case BlobAttempt::Outcome::kDone:
        return;
      case BlobAttempt::Outcome::kDigestMismatch:
        BlobWriter::truncate_file(file.get());
        if (mismatch_retried) {
          ::unlink(blob.path.c_str());
          throw RegistryError(ErrorKind::kDigestMismatch,
                              what + " does not match its digest (downloaded twice); the registry is serving "
                                     "corrupt data");
        }
        mismatch_retried = true;
        if (options_.log) options_.log(what + " does not match its digest; downloading it again");
        break;
      case BlobAttempt::Outcome::kRetry:
        if (!backoff.wait(attempt.reason, attempt.wait))
          throw RegistryError(attempt.failure, attempt.reason + " (gave up after " +
                                                   std::to_string(backoff.attempts_made()) +
                                                   " attempts; run again to resume)");
        break;
    }
  }
}

}  // namespace capsa::registry
