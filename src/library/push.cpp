#include "library/push.hpp"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "oci/digest.hpp"
#include "registry/http.hpp"
#include "sif/image.hpp"
#include "signing/verify.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace capsa::library {
namespace {

using nlohmann::json;

struct FileDigests {
  std::string sha256_hex, md5_hex;
};

struct FreeMdContext {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

std::string hex_of(const unsigned char* bytes, unsigned length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < length; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// Reads [offset, offset+length) of `fd` in 1 MiB pieces, handing each to `use`.
template <typename Use>
void read_range(int fd, std::uint64_t offset, std::uint64_t length, const std::string& what, Use use) {
  std::vector<char> buffer(1 << 20);
  for (std::uint64_t done = 0; done < length;) {
    const ssize_t n = ::pread(fd, buffer.data(), std::min<std::uint64_t>(buffer.size(), length - done),
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("reading " + what);
    if (n == 0) throw Error(what + " became shorter while it was pushed");
    use(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    done += static_cast<std::uint64_t>(n);
  }
}

// sha256 names the image in the library; md5 is what an old library's object store checks.
FileDigests digests_of(int fd, std::uint64_t size, const std::string& what) {
  oci::Hasher sha256;
  std::unique_ptr<EVP_MD_CTX, FreeMdContext> md5(EVP_MD_CTX_new());
  if (!md5 || EVP_DigestInit_ex(md5.get(), EVP_md5(), nullptr) != 1) throw Error("OpenSSL cannot compute MD5");
  read_range(fd, 0, size, what, [&](std::string_view piece) {
    sha256.update(piece);
    EVP_DigestUpdate(md5.get(), piece.data(), piece.size());
  });
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned length = 0;
  EVP_DigestFinal_ex(md5.get(), out, &length);
  return {sha256.finish().hex(), hex_of(out, length)};
}

std::string sha256_of_range(int fd, std::uint64_t offset, std::uint64_t length, const std::string& what) {
  oci::Hasher hasher;
  read_range(fd, offset, length, what, [&](std::string_view piece) { hasher.update(piece); });
  return hasher.finish().hex();
}

std::string id_of(const json& record, const std::string& what) {
  if (!record.is_object() || !record.contains("id") || !record.at("id").is_string() ||
      record.at("id").get<std::string>().empty())
    throw Error("the library sent a " + what + " record without an id");
  return record.at("id").get<std::string>();
}

// Finds a record, or creates it when the library has none (404).
json find_or_create(LibraryApi& api, const std::string& path, const std::string& create_path, const json& body,
                    const std::string& what) {
  if (auto found = api.get(path)) return *found;
  auto created = api.post(create_path, body);
  if (!created)
    throw Error("the library at " + api.host() + " has no endpoint POST " + create_path + " to create " + what);
  return *created;
}

// Whether a presigned URL wants the x-amz-content-sha256 header (it is among the signed
// headers, scs-library-client's remoteSHA256ChecksumSupport).
bool wants_sha256_header(const std::string& url) {
  const auto at = url.find("X-Amz-SignedHeaders=");
  if (at == std::string::npos) return false;
  std::string value = url.substr(at + 20, url.find('&', at) - at - 20);
  for (std::size_t p; (p = value.find("%3B")) != std::string::npos || (p = value.find("%3b")) != std::string::npos;)
    value.replace(p, 3, ";");
  return (";" + value + ";").find(";x-amz-content-sha256;") != std::string::npos;
}

class Uploader {
 public:
  Uploader(LibraryApi& api, int fd, std::uint64_t size, const FileDigests& digests, std::string image_id,
           Progress& progress, std::string task, std::string what)
      : api_(api),
        fd_(fd),
        size_(size),
        digests_(digests),
        image_id_(std::move(image_id)),
        progress_(progress),
        task_(std::move(task)),
        what_(std::move(what)),
        store_(api.options(), nullptr) {}

  // The upload's completion record ({"quota": ..., "containerUrl": ...}), or null.
  json run(bool v2, std::uint64_t multipart_minimum) {
    progress_.start(task_, size_);
    json done;
    if (!v2) {
      done = with_retries("the upload", [&] {
        auto answer =
            api_.post_file("/v1/imagefile/" + image_id_, {fd_, 0, size_}, [&](std::uint64_t sent) { report(sent); });
        if (!answer) throw Error("the library at " + api_.host() + " has no upload endpoint for " + what_);
        return *answer;
      });
    } else if (auto multipart = size_ >= multipart_minimum ? start_multipart() : std::nullopt) {
      done = upload_parts(*multipart);
    } else {
      done = upload_single();
    }
    progress_.finish(task_);
    return done;
  }

  int resent = 0;

 private:
  // Called from libcurl's progress callback: it must not throw (an interrupt cancels the
  // transfer through HttpRequest::cancel instead).
  void report(std::uint64_t sent_in_request) { progress_.update(task_, confirmed_ + sent_in_request); }

  // Runs `attempt` again after a dropped connection or a 5xx from the object store, a few
  // times; anything else fails at once.
  template <typename Attempt>
  auto with_retries(const std::string& what, Attempt attempt) -> decltype(attempt()) {
    for (int tries = 0;; ++tries) {
      throw_if_interrupted();
      try {
        return attempt();
      } catch (const registry::TransportError& e) {
        if (e.kind() == registry::ErrorKind::kCancelled || tries >= api_.options().max_retries ||
            interrupt_signal() != 0)
          throw Error("pushing " + what_ + ": " + what + " kept failing: " + e.what());
      } catch (const RetryableStoreError& e) {
        if (tries >= api_.options().max_retries)
          throw Error("pushing " + what_ + ": " + what + " kept failing: " + e.what());
      }
      ++resent;
      progress_.note("sending " + what + " of " + what_ + " again (the connection broke off)");
    }
  }

  struct RetryableStoreError : Error {
    using Error::Error;
  };

  // PUT of [offset, offset+length) to a presigned URL; the ETag the store answers.
  std::string put_to_store(const std::string& url, std::uint64_t offset, std::uint64_t length,
                           const std::string& sha256_hex, bool sha256_header) {
    registry::HttpRequest request;
    request.method = registry::HttpRequest::Method::kPut;
    request.url = url;
    request.body_file = registry::FileSlice{fd_, offset, length};
    request.headers.emplace_back("Content-Type: application/octet-stream");
    if (sha256_header) request.headers.push_back("x-amz-content-sha256: " + sha256_hex);
    request.on_sent = [&](std::uint64_t sent) { report(sent); };
    request.cancel = &interrupt_flag();
    const registry::HttpResponse response = store_.perform(request);
    if (response.status >= 500)
      throw RetryableStoreError("the object store at " + registry::url_host(url) + " answered HTTP " +
                                std::to_string(response.status));
    if (response.status != 200) {
      const std::string said = library_error_message(response.body);
      throw Error("the object store at " + registry::url_host(url) + " refused " + what_ + " (HTTP " +
                  std::to_string(response.status) + (said.empty() ? "" : ": " + said) + ")");
    }
    return response.header("etag").value_or("");
  }

  struct Multipart {
    std::string upload_id;
    std::uint64_t total_parts = 0, part_size = 0;
    bool s3_compliant = true;
  };

  std::optional<Multipart> start_multipart() {
    auto answer = api_.post("/v2/imagefile/" + image_id_ + "/_multipart", {{"filesize", size_}});
    if (!answer) return std::nullopt;  // a library without multipart uploads: single part
    Multipart m;
    try {
      m.upload_id = answer->at("uploadID").get<std::string>();
      m.total_parts = answer->at("totalParts").get<std::uint64_t>();
      m.part_size = answer->at("partSize").get<std::uint64_t>();
      if (answer->contains("options") && answer->at("options").is_object()) {
        const std::string s3 = answer->at("options").value("s3compliant", "");
        m.s3_compliant = s3.empty() || s3 == "true";  // the client's default
      }
    } catch (const json::exception& e) {
      throw Error("the library at " + api_.host() + " sent a malformed multipart upload record: " + e.what());
    }
    if (m.part_size == 0 || m.total_parts == 0 || m.part_size * m.total_parts < size_ ||
        m.part_size * (m.total_parts - 1) >= size_)
      throw Error("the library at " + api_.host() + " planned " + std::to_string(m.total_parts) + " parts of " +
                  std::to_string(m.part_size) + " bytes for a file of " + std::to_string(size_));
    return m;
  }

  json upload_parts(const Multipart& m) {
    const std::string base = "/v2/imagefile/" + image_id_;
    json completed = json::array();
    try {
      for (std::uint64_t number = 1; number <= m.total_parts; ++number) {
        const std::uint64_t offset = (number - 1) * m.part_size;
        const std::uint64_t length = std::min(m.part_size, size_ - offset);
        const std::string part_sha256 = m.s3_compliant ? sha256_of_range(fd_, offset, length, what_) : "";
        const std::string etag = with_retries("part " + std::to_string(number), [&] {
          // A fresh presigned URL for every attempt: the last one may have expired.
          auto answer = api_.put(
              base + "/_multipart",
              {{"partSize", length}, {"uploadID", m.upload_id}, {"partNumber", number}, {"sha256sum", part_sha256}});
          if (!answer || !answer->contains("presignedURL") || !answer->at("presignedURL").is_string())
            throw Error("the library at " + api_.host() + " gave no upload URL for part " + std::to_string(number));
          return put_to_store(answer->at("presignedURL").get<std::string>(), offset, length, part_sha256,
                              m.s3_compliant);
        });
        completed.push_back({{"partNumber", number}, {"token", etag}});
        confirmed_ += length;
      }
      auto done = api_.put(base + "/_multipart_complete", {{"uploadID", m.upload_id}, {"completedParts", completed}});
      if (!done) throw Error("the library at " + api_.host() + " lost the multipart upload of " + what_);
      return *done;
    } catch (const Error&) {
      try {  // the object store may drop the parts it holds; the push failed either way
        api_.put(base + "/_multipart_abort", {{"uploadID", m.upload_id}});
      } catch (const Error&) {
      }
      throw;
    }
  }

  json upload_single() {
    const std::string base = "/v2/imagefile/" + image_id_;
    auto answer =
        api_.post(base, {{"filesize", size_}, {"sha256sum", digests_.sha256_hex}, {"md5sum", digests_.md5_hex}});
    if (!answer || !answer->contains("uploadURL") || !answer->at("uploadURL").is_string() ||
        answer->at("uploadURL").get<std::string>().empty())
      throw Error("the library at " + api_.host() + " gave no upload URL for " + what_);
    const std::string url = answer->at("uploadURL").get<std::string>();
    with_retries("the upload",
                 [&] { return put_to_store(url, 0, size_, digests_.sha256_hex, wants_sha256_header(url)); });
    auto done = api_.put(base + "/_complete", json::object());
    return done ? *done : json();
  }

  LibraryApi& api_;
  int fd_;
  std::uint64_t size_;
  const FileDigests& digests_;
  std::string image_id_;
  Progress& progress_;
  std::string task_, what_;
  registry::HttpSession store_;
  std::uint64_t confirmed_ = 0;  // bytes of the parts the store has accepted
};

void require_signature(const std::string& image) {
  try {
    signing::verify_image(image, {});
  } catch (const signing::VerificationError& e) {
    throw Error("will not push " + image + ": it is not signed by a key you trust (" + e.what() +
                "); sign it with `capsa sign`, or push it unsigned with --allow-unsigned");
  }
}

}  // namespace

PushTarget parse_push_target(std::string_view text) {
  const auto fail = [&](const std::string& why) {
    return FormatError("invalid push destination \"" + std::string(text) + "\": " + why +
                       " (library://ENTITY/COLLECTION/CONTAINER[:TAG[,TAG...]])");
  };
  if (!is_library_reference(text)) throw fail("it does not start with library://");
  std::string_view rest = text.substr(10);
  const std::size_t last_slash = rest.rfind('/');
  const std::size_t colon = rest.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  std::vector<std::string> tags;
  if (colon != std::string_view::npos) {
    std::string_view list = rest.substr(colon + 1);
    for (std::size_t start = 0;;) {
      const std::size_t comma = list.find(',', start);
      tags.emplace_back(list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  }
  const std::string_view path = rest.substr(0, colon);
  if (std::count(path.begin(), path.end(), '/') < 2) throw fail("name the entity, the collection and the container");
  if (rest.find('@') != std::string_view::npos) throw fail("a push names tags, not a digest");
  PushTarget target;
  // Each tag is checked as a pull reference checks its one tag.
  target.ref = parse_library_reference("library://" + std::string(path) + (tags.empty() ? "" : ":" + tags.front()));
  for (const auto& tag : tags) parse_library_reference("library://" + std::string(path) + ":" + tag);
  target.ref.written = std::string(text);
  target.tags = tags.empty() ? std::vector<std::string>{"latest"} : tags;
  return target;
}

LibraryPushResult push_to_library(LibraryApi& api, const LibraryPushOptions& options, Progress& progress) {
  const LibraryReference& ref = options.target.ref;
  const std::string what = options.image;
  sif::Image sif = sif::Image::open(options.image);
  LibraryPushResult result;
  result.architecture = sif.header().arch_name();
  if (result.architecture == "unknown")
    throw Error(options.image + ": the SIF header names no known architecture; the library files images by it");
  if (options.require_signature)
    require_signature(options.image);
  else
    log::warning("Skipping container verification");
  const FileDigests digests = digests_of(sif.fd(), sif.file_size(), options.image);
  result.digest = "sha256:" + digests.sha256_hex;
  const std::string hash = "sha256." + digests.sha256_hex;

  const std::string version = api.api_version();
  const std::string& entity_name = ref.entity;
  const std::string collection_path = entity_name + "/" + ref.collection;
  const std::string container_path = collection_path + "/" + ref.container;
  const json entity =
      find_or_create(api, "/v1/entities/" + entity_name, "/v1/entities",
                     {{"name", entity_name}, {"description", "No description"}}, "entity " + entity_name);
  const json collection =
      find_or_create(api, "/v1/collections/" + collection_path, "/v1/collections",
                     {{"name", ref.collection}, {"description", "No description"}, {"entity", id_of(entity, "entity")}},
                     "collection " + collection_path);
  const json container = find_or_create(
      api, "/v1/containers/" + container_path, "/v1/containers",
      {{"name", ref.container}, {"description", "No description"}, {"collection", id_of(collection, "collection")}},
      "container " + container_path);
  const std::string container_id = id_of(container, "container");
  const std::string image_path = "/v1/images/" + container_path + ":" + hash + "?arch=" + result.architecture;
  const json image = find_or_create(api, image_path, "/v1/images",
                                    {{"hash", hash}, {"description", options.description}, {"container", container_id}},
                                    "the image record");
  const std::string image_id = id_of(image, "image");

  result.already_uploaded = image.value("uploaded", false);
  if (result.already_uploaded) {
    progress.note("the library has " + container_path + " " + result.digest + " already; not uploading it again");
  } else {
    Uploader uploader(api, sif.fd(), sif.file_size(), digests, image_id, progress, "uploading " + container_path, what);
    const json done = uploader.run(api_at_least(version, "2.0.0-alpha.1"), options.multipart_minimum);
    result.resent_parts = uploader.resent;
    if (done.is_object() && done.contains("quota") && done.at("quota").is_object()) {
      result.quota_used = done.at("quota").value("quotaUsage", std::uint64_t{0});
      result.quota_total = done.at("quota").value("quotaTotal", std::uint64_t{0});
    }
  }

  // The library's own word that the whole file is there and is what was sent.
  const auto confirmed = api.get(image_path);
  if (!confirmed || !confirmed->value("uploaded", false) || confirmed->value("hash", "") != hash ||
      (confirmed->contains("size") && confirmed->at("size").is_number_unsigned() &&
       confirmed->at("size").get<std::uint64_t>() != sif.file_size()))
    throw Error("the library at " + api.host() + " did not confirm the upload of " + what + " as " + hash +
                "; no tag was set, push again");

  const bool per_arch = api_at_least(version, "2.0.0-alpha.2");
  const std::string tags_path = (per_arch ? "/v2/tags/" : "/v1/tags/") + container_id;
  json existing = api.get(tags_path).value_or(json::object());
  if (per_arch) existing = existing.is_object() ? existing.value(result.architecture, json::object()) : json::object();
  for (const std::string& tag : options.target.tags) {
    if (existing.is_object() && existing.contains(tag) && existing.at(tag) != image_id) {
      std::string note = "tag ";
      note.append(tag).append(" of ").append(container_path).append(" (").append(result.architecture);
      progress.note(note.append(") now names this image instead of another"));
    }
    json body = {{"Tag", tag}, {"ImageID", image_id}};
    if (per_arch) body["Arch"] = result.architecture;
    if (!api.post(tags_path, body))
      throw Error("the library at " + api.host() + " has no container " + container_path + " to tag");
  }
  return result;
}

}  // namespace capsa::library
