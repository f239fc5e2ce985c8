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

#include "library/reference.hpp"
#include "registry/options.hpp"

namespace capsa::library {

struct ImageRecord {
  std::string digest;        // "sha256:HEX", from the record's "sha256.HEX"
  std::uint64_t size = 0;
  std::string architecture;  // as recorded; empty when the library does not say
};

// Where the library is: --library URL, else APPTAINER_LIBRARY / SINGULARITY_LIBRARY, else
// https://HOST of a reference that names one. Apptainer configures no default library
// (its remote list is empty until a site adds one), and neither does capsa: Error otherwise.
std::string library_base_url(const LibraryReference& ref, const std::optional<std::string>& flag,
                             const registry::EnvLookup& env = registry::process_env);

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

 private:
  std::string base_url_;
  registry::ClientOptions options_;
};

}  // namespace capsa::library
