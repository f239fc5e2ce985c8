#pragma once
// The Library API's client side, as SingularityCE's scs-library-client speaks it (the
// community specification: singularityhub/library-api):
//   GET /v1/images/ENTITY/COLLECTION/CONTAINER:TAG?arch=ARCH   the image's record:
//       {"data": {"hash": "sha256.HEX", "size": N, "arch": "amd64", ...}}
//   GET /v1/imagefile/ENTITY/COLLECTION/CONTAINER:TAG?arch=ARCH the file: 200 with the
//       bytes (one stream), or a redirect (303) to the blob store, which serves ranges and
//       is read in parts, several at once.
// Every download is checked against the record's sha256 before anyone may use it.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "library/reference.hpp"
#include "library/remotes.hpp"
#include "registry/options.hpp"

namespace capsa::library {

struct ImageRecord {
  std::string digest;        // "sha256:HEX", from the record's "sha256.HEX"
  std::uint64_t size = 0;
  std::string architecture;  // as recorded; empty when the library does not say
};

// A library to talk to, and the token to show it (Authorization: Bearer), if any.
struct LibraryEndpoint {
  std::string url;     // https://HOST or http://HOST:PORT, no trailing /
  std::string token;   // of the remote whose endpoint this is; "" for none
  std::string remote;  // that remote's name, "" when no remote names this endpoint
};

// Where the library is: --library URL, else APPTAINER_LIBRARY / SINGULARITY_LIBRARY, else
// https://HOST of a reference that names one, else the active remote (remotes.hpp).
// Apptainer configures no default library (its remote list is empty until a site adds
// one), and neither does capsa: Error otherwise. The token is that of the remote whose
// endpoint the URL is, so a token is never shown to another host. With an exclusive
// system remote, only root may name another library (Error).
LibraryEndpoint library_endpoint(const LibraryReference& ref, const std::optional<std::string>& flag,
                                 const Remotes& remotes, bool root,
                                 const registry::EnvLookup& env = registry::process_env);

// Checks `token` at the library (GET /v1/token-status, as SingularityCE's client does):
// Error naming the endpoint when it is refused (HTTP 401/403) or the check fails.
void check_library_token(const std::string& url, const std::string& token, const registry::ClientOptions& options);

// One line per service of the endpoint (`remote status`): the services its
// /assets/config/config.json lists, each with its /version, or the endpoint's own
// /version when it has no such file. Error when the endpoint answers neither.
struct ServiceStatus {
  std::string name, url, status, version;
};
std::vector<ServiceStatus> library_status(const std::string& url, const registry::ClientOptions& options);

class LibraryClient {
 public:
  LibraryClient(std::string base_url, registry::ClientOptions options);

  // The image's record for `architecture`; Error naming the image when the library has no
  // such image, has it only for another architecture, or answers with something else.
  ImageRecord image(const LibraryReference& ref, const std::string& architecture);

  // Writes the image into `fd` (from offset 0, `record.size` bytes) and checks its sha256;
  // `on_bytes` gets the running total. Error when the content differs from the record.
  void download(const LibraryReference& ref, const std::string& architecture, const ImageRecord& record, int fd,
                const std::function<void(std::uint64_t)>& on_bytes);

  // Parts of this size are fetched concurrently from a blob store (scs-library-client's
  // default part size and concurrency).
  std::uint64_t part_size = 5 << 20;
  int concurrency = 4;
  // Sent as a Bearer token to the library itself (never to the blob store it redirects
  // to); `remote` names its remote in messages.
  std::string token;
  std::string remote;

 private:
  std::string base_url_;
  registry::ClientOptions options_;
};

}  // namespace capsa::library
