#pragma once
// Errors of the registry client. Each one is a single line that names the registry (and
// repository or blob) and says what to do; none ever contains a credential or a token.

#include <string>

#include "util/error.hpp"

namespace capsa::registry {

enum class ErrorKind {
  kNotFound,           // 404, or 401 for a repository that does not exist or is private (B6)
  kUnauthorized,       // credentials rejected, or needed and missing
  kUnreachable,        // DNS failure, connection refused
  kTls,                // certificate or handshake failure
  kStalled,            // no bytes for options.stall_seconds, or connect timeout
  kDigestMismatch,     // content does not hash to the digest asked for
  kUnsupportedMediaType,
  kProtocol,           // malformed answer (bad Content-Range, oversized manifest, bad token JSON)
  kServer,             // 5xx / 429 after the retries ran out
  kCancelled,          // another transfer failed first, or the caller cancelled
};

class RegistryError : public Error {
 public:
  RegistryError(ErrorKind kind, const std::string& message) : Error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace capsa::registry
