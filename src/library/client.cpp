#include "library/client.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "oci/digest.hpp"
#include "registry/http.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::library {
namespace {

using registry::BodyConsumer;
using registry::HttpRequest;
using registry::HttpResponse;
using registry::HttpSession;

std::string describe(const LibraryReference& ref) { return "library image " + ref.api_path(); }

// Writes a response body at increasing offsets of `fd`, never past `limit`.
class OffsetWriter : public BodyConsumer {
 public:
  OffsetWriter(int fd, std::uint64_t offset, std::uint64_t limit, long expected_status,
               std::function<void(std::uint64_t)> on_bytes)
      : fd_(fd), offset_(offset), limit_(limit), expected_status_(expected_status), on_bytes_(std::move(on_bytes)) {}
  Decision begin(const HttpResponse& head) override {
    return head.status == expected_status_ ? Decision::kStream : Decision::kCapture;
  }
  void write(std::span<const char> data) override {
    if (data.size() > limit_ - offset_) throw Error("the server sent more bytes than the image has");
    write_all_at(fd_, std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()), offset_);
    offset_ += data.size();
    on_bytes_(data.size());
  }
  std::uint64_t offset() const { return offset_; }

 private:
  int fd_;
  std::uint64_t offset_;
  std::uint64_t limit_;
  long expected_status_;
  std::function<void(std::uint64_t)> on_bytes_;
};

// "https://host:port" of a URL, to resolve a Location header that is a path.
std::string origin_of(const std::string& url) {
  std::size_t scheme_end = url.find("://");
  std::size_t path = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

void check_digest(int fd, const ImageRecord& record, const LibraryReference& ref) {
  oci::Hasher hasher("sha256");
  std::vector<char> buffer(1 << 20);
  std::uint64_t offset = 0;
  while (offset < record.size) {
    ssize_t n = ::pread(fd, buffer.data(), std::min<std::uint64_t>(buffer.size(), record.size - offset),
                        static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("reading back the downloaded " + describe(ref));
    hasher.update(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    offset += static_cast<std::uint64_t>(n);
  }
  const std::string got = hasher.finish().to_string();
  if (got != record.digest)
    throw Error(describe(ref) + ": the download has digest " + got + " but the library's record says " +
                record.digest + "; nothing was kept (the library or the blob store serves a damaged file)");
}

}  // namespace

namespace {

std::string normalised_url(std::string url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) url = "https://" + url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

HttpResponse get_with_token(const std::string& url, const std::string& token, const registry::ClientOptions& options) {
  HttpSession session(options, nullptr);
  HttpRequest request;
  request.url = url;
  if (!token.empty()) {
    request.headers.push_back("Authorization: Bearer " + token);
    request.follow_redirects = false;  // libcurl would show the header to the next host too
  }
  return session.perform(request);
}

}  // namespace

LibraryEndpoint library_endpoint(const LibraryReference& ref, const std::optional<std::string>& flag,
                                 const Remotes& remotes, bool root, const registry::EnvLookup& env) {
  std::string chosen;
  if (flag && !flag->empty()) {
    chosen = *flag;
  } else if (auto from_env = env("APPTAINER_LIBRARY"); from_env && !from_env->empty()) {
    chosen = *from_env;
  } else if (auto legacy = env("SINGULARITY_LIBRARY"); legacy && !legacy->empty()) {
    chosen = *legacy;
  } else if (!ref.host.empty()) {
    chosen = "https://" + ref.host;
  }
  LibraryEndpoint endpoint;
  const std::string exclusive = remotes.exclusive();
  if (chosen.empty()) {
    const std::string active = remotes.active();
    if (active.empty())
      throw Error("no library is configured for " + ref.written +
                  ": give --library https://HOST (or set APPTAINER_LIBRARY), name the host "
                  "(library://HOST/ENTITY/COLLECTION/CONTAINER), or add a remote: capsa remote add NAME URI");
    const Remote& remote = remotes.get(active);
    return {library_url_of(remote), remote.token, active};
  }
  endpoint.url = normalised_url(chosen);
  if (!exclusive.empty() && !root && endpoint.url != library_url_of(remotes.get(exclusive)))
    throw Error("the administrator made remote " + exclusive + " exclusive: library:// images come from " +
                library_url_of(remotes.get(exclusive)) + " only, not from " + endpoint.url);
  // The token of the remote this endpoint is (the active one first).
  std::vector<std::string> names = {remotes.active()};
  for (const auto& [name, remote] : remotes.all()) names.push_back(name);
  for (const std::string& name : names) {
    if (name.empty()) continue;
    const Remote& remote = remotes.get(name);
    if (library_url_of(remote) == endpoint.url) {
      endpoint.token = remote.token;
      endpoint.remote = name;
      break;
    }
  }
  return endpoint;
}

void check_library_token(const std::string& url, const std::string& token, const registry::ClientOptions& options) {
  const std::string where = registry::url_host(url);
  HttpResponse response = get_with_token(url + "/v1/token-status", token, options);
  if (response.status == 401 || response.status == 403)
    throw Error("the library at " + where + " rejected the token (HTTP " + std::to_string(response.status) +
                "): check it and log in again");
  if (response.status != 200)
    throw Error("the library at " + where + " answered HTTP " + std::to_string(response.status) +
                " to the token check (GET /v1/token-status)");
}

std::vector<ServiceStatus> library_status(const std::string& url, const registry::ClientOptions& options) {
  const std::string where = registry::url_host(url);
  auto version_of = [&](const std::string& name, const std::string& service_url) {
    ServiceStatus status{name, service_url, "N/A", ""};
    try {
      HttpResponse response = get_with_token(service_url + "/version", "", options);
      if (response.status != 200) {
        status.status = "HTTP " + std::to_string(response.status);
        return status;
      }
      const auto json = nlohmann::json::parse(response.body);
      const auto& data = json.contains("data") ? json.at("data") : json;
      status.version = data.value("version", "");
      status.status = "OK";
    } catch (const nlohmann::json::exception&) {
      status.status = "malformed /version";
    } catch (const registry::TransportError&) {
      status.status = "unreachable";
    }
    return status;
  };
  HttpResponse config = get_with_token(url + "/assets/config/config.json", "", options);
  std::vector<ServiceStatus> out;
  if (config.status == 200) {
    try {
      const auto json = nlohmann::json::parse(config.body);
      // Sylabs' config.json: {"libraryAPI": {"uri": ...}, "keystoreAPI": {...}, ...}
      for (const auto& [key, value] : json.items()) {
        if (!value.is_object() || !value.contains("uri") || !value.at("uri").is_string()) continue;
        std::string name = key;
        if (name.size() > 3 && name.ends_with("API")) name.resize(name.size() - 3);
        if (!name.empty()) name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
        out.push_back(version_of(name, normalised_url(value.at("uri").get<std::string>())));
      }
    } catch (const nlohmann::json::exception& e) {
      throw Error("the endpoint at " + where + " sent a malformed /assets/config/config.json: " + e.what());
    }
    if (!out.empty()) return out;
  }
  ServiceStatus own = version_of("Library", url);
  if (own.status != "OK")
    throw Error("the endpoint at " + where + " answered neither /assets/config/config.json nor /version (" +
                own.status + ")");
  out.push_back(own);
  return out;
}

LibraryClient::LibraryClient(std::string base_url, registry::ClientOptions options)
    : base_url_(std::move(base_url)), options_(std::move(options)) {}

ImageRecord LibraryClient::image(const LibraryReference& ref, const std::string& architecture) {
  HttpSession session(options_, nullptr);
  HttpRequest request;
  request.url = base_url_ + "/v1/images/" + ref.api_path() + "?arch=" + architecture;
  if (!token.empty()) {
    request.headers.push_back("Authorization: Bearer " + token);
    request.follow_redirects = false;  // libcurl would show the header to the next host too
  }
  HttpResponse response = session.perform(request);
  const std::string where = registry::url_host(base_url_);
  if ((response.status == 401 || response.status == 403) && !token.empty())
    throw Error("the library at " + where + " rejected the token of remote " + remote + " (HTTP " +
                std::to_string(response.status) + "): log in again with `capsa remote login " + remote + "`");
  if (response.status == 404)
    throw Error(describe(ref) + " was not found for " + architecture + " at " + where +
                " (check the name and tag, or pull another architecture with --arch)");
  if (response.status == 401 || response.status == 403)
    throw Error("the library at " + where + " refused access to " + ref.api_path() + " (HTTP " +
                std::to_string(response.status) + ")");
  if (response.status != 200)
    throw Error("the library at " + where + " answered HTTP " + std::to_string(response.status) + " for " +
                ref.api_path());
  ImageRecord record;
  try {
    const auto data = nlohmann::json::parse(response.body).at("data");
    const std::string hash = data.at("hash").get<std::string>();
    if (hash.rfind("sha256.", 0) != 0) throw Error("its hash \"" + hash + "\" is not sha256.HEX");
    record.digest = oci::Digest::parse("sha256:" + hash.substr(7)).to_string();
    record.size = data.at("size").get<std::uint64_t>();
    if (data.contains("arch") && data.at("arch").is_string()) record.architecture = data.at("arch").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw Error("the library at " + where + " sent a malformed record for " + ref.api_path() + ": " + e.what());
  } catch (const Error& e) {
    throw Error("the library at " + where + " sent a malformed record for " + ref.api_path() + ": " + e.what());
  }
  if (!record.architecture.empty() && record.architecture != architecture)
    throw Error(describe(ref) + " is built for " + record.architecture + ", not " + architecture +
                " (pull it with --arch " + record.architecture + " to get it anyway)");
  if (ref.digest && *ref.digest != record.digest)
    throw Error(describe(ref) + ": the library's record has digest " + record.digest + ", not the " + *ref.digest +
                " asked for");
  return record;
}

void LibraryClient::download(const LibraryReference& ref, const std::string& architecture, const ImageRecord& record,
                             int fd, const std::function<void(std::uint64_t)>& on_bytes) {
  if (::ftruncate(fd, static_cast<off_t>(record.size)) != 0) throw_errno("sizing the file for " + describe(ref));
  std::mutex progress_mutex;
  std::uint64_t done = 0;
  auto count = [&](std::uint64_t bytes) {
    std::lock_guard lock(progress_mutex);
    done += bytes;
    on_bytes(done);
  };

  HttpSession session(options_, nullptr);
  HttpRequest request;
  request.url = base_url_ + "/v1/imagefile/" + ref.api_path() + "?arch=" + architecture;
  request.follow_redirects = false;
  if (!token.empty()) request.headers.push_back("Authorization: Bearer " + token);
  OffsetWriter whole(fd, 0, record.size, 200, count);
  HttpResponse response = session.perform(request, &whole);
  const std::string where = registry::url_host(base_url_);
  if (response.status == 200) {  // one stream: a library without a separate blob store
    if (whole.offset() != record.size)
      throw Error(describe(ref) + ": the library sent " + std::to_string(whole.offset()) + " of " +
                  std::to_string(record.size) + " bytes; nothing was kept, run again");
    check_digest(fd, record, ref);
    return;
  }
  if (response.status == 404) throw Error(describe(ref) + " was not found for " + architecture + " at " + where);
  auto location = response.header("location");
  if (response.status < 300 || response.status > 399 || !location || location->empty())
    throw Error("the library at " + where + " answered HTTP " + std::to_string(response.status) +
                " for the image file of " + ref.api_path());
  const std::string blob_url = location->front() == '/' ? origin_of(request.url) + *location : *location;

  // The blob store, in parts: each worker takes the next part; a part cut short (a dropped
  // connection) is resumed where it stopped, a few times, before the pull fails.
  const std::uint64_t parts = record.size == 0 ? 0 : (record.size + part_size - 1) / part_size;
  std::atomic<std::uint64_t> next_part{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto worker = [&] {
    try {
      HttpSession part_session(options_, nullptr);
      for (std::uint64_t part = next_part++; part < parts && !failed; part = next_part++) {
        const std::uint64_t first = part * part_size;
        const std::uint64_t end = std::min(record.size, first + part_size);  // exclusive
        std::uint64_t at = first;
        for (int attempt = 0; at < end; ++attempt) {
          HttpRequest ranged;
          ranged.url = blob_url;
          ranged.headers.push_back("Range: bytes=" + std::to_string(at) + "-" + std::to_string(end - 1));
          ranged.cancel = &failed;
          OffsetWriter writer(fd, at, end, 206, count);
          try {
            HttpResponse part_response = part_session.perform(ranged, &writer);
            if (part_response.status != 206)
              throw Error("the blob store at " + registry::url_host(blob_url) + " answered HTTP " +
                          std::to_string(part_response.status) + " to a ranged request for " + describe(ref));
          } catch (const registry::TransportError& e) {
            if (!e.retriable() || attempt >= options_.max_retries) throw;
          }
          at = writer.offset();
          if (at < end && attempt >= options_.max_retries)
            throw Error("the blob store at " + registry::url_host(blob_url) + " kept breaking off the download of " +
                        describe(ref));
        }
      }
    } catch (...) {
      failed = true;
      std::lock_guard lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  const auto count_workers = std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(1, concurrency)), parts);
  for (std::uint64_t i = 0; i < count_workers; ++i) workers.emplace_back(worker);
  for (auto& t : workers) t.join();
  if (first_error) std::rethrow_exception(first_error);
  check_digest(fd, record, ref);
}

}  // namespace capsa::library
