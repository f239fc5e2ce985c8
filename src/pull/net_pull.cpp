#include "pull/net_pull.hpp"

#include <unistd.h>

#include "registry/curl_handles.hpp"
#include "sif/image.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"

namespace capsa::pull {
namespace {

struct Transfer {
  CURL* curl = nullptr;
  int fd = -1;
  long status = 0;  // of the last response, redirects followed
  Progress* progress = nullptr;
  std::string label;
  bool started = false;
};

long response_code(CURL* curl) {
  long code = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

// Writes the body of a 200 response only: an error page never becomes the image.
size_t write_body(char* data, size_t size, size_t count, void* opaque) {
  auto* t = static_cast<Transfer*>(opaque);
  t->status = response_code(t->curl);
  if (t->status != 200) return 0;
  const size_t total = size * count;
  for (size_t done = 0; done < total;) {
    const ssize_t n = ::write(t->fd, data + done, total - done);
    if (n <= 0) return 0;  // curl then fails the transfer with CURLE_WRITE_ERROR
    done += static_cast<size_t>(n);
  }
  return total;
}

int on_progress(void* opaque, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(opaque);
  if (interrupt_flag().load()) return 1;  // aborts the transfer
  if (!t->started && (total > 0 || now > 0)) {
    t->progress->start(t->label, static_cast<std::uint64_t>(total));
    t->started = true;
  }
  if (t->started) t->progress->update(t->label, static_cast<std::uint64_t>(now));
  return 0;
}

registry::EasyHandle easy_for(const std::string& url) {
  registry::ensure_curl_initialised();
  registry::EasyHandle curl(curl_easy_init());
  if (!curl) throw Error("cannot start a download of " + url);
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  registry::use_system_ca_bundle(curl.get());
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_USERAGENT, "capsa");
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT, 60L);
  return curl;
}

std::string status_problem(const std::string& url, long status) {
  if (status == 404) return url + ": not found (HTTP 404): the requested image was not found";
  return url + ": the server answered HTTP " + std::to_string(status);
}

size_t keep_header(char* data, size_t size, size_t count, void* opaque) {
  const std::string line(data, size * count);
  auto* out = static_cast<std::pair<std::string, std::string>*>(opaque);
  const auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
    if (name == "last-modified") out->first = value;
    if (name == "etag") out->second = value;
  }
  return size * count;
}

}  // namespace

bool is_http_reference(std::string_view reference) {
  return reference.starts_with("http://") || reference.starts_with("https://");
}

std::string http_default_name(std::string_view url) {
  url = url.substr(0, url.find_first_of("?#"));
  const std::size_t slash = url.rfind('/');
  return std::string(slash == std::string_view::npos ? url : url.substr(slash + 1));
}

std::string http_validator(const std::string& url) {
  registry::EasyHandle curl = easy_for(url);
  std::pair<std::string, std::string> found;  // Last-Modified, ETag
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, keep_header);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &found);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  const CURLcode result = curl_easy_perform(curl.get());
  if (result != CURLE_OK) throw Error(url + ": " + (error[0] != '\0' ? error : curl_easy_strerror(result)));
  const long status = response_code(curl.get());
  if (status == 404) throw Error(status_problem(url, status));
  if (status != 200) return "";  // HEAD refused (405) or odd: the download will tell
  return !found.first.empty() ? found.first : found.second;
}

void download_sif(const std::string& url, int fd, const std::string& path, Progress& progress) {
  registry::EasyHandle curl = easy_for(url);
  Transfer t;
  t.curl = curl.get();
  t.fd = fd;
  t.progress = &progress;
  t.label = http_default_name(url);
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  const CURLcode result = curl_easy_perform(curl.get());
  throw_if_interrupted();
  if (t.started) progress.finish(t.label);
  const long status = response_code(curl.get());
  if (status != 0 && status != 200) throw Error(status_problem(url, status));
  if (result != CURLE_OK) throw Error(url + ": " + (error[0] != '\0' ? error : curl_easy_strerror(result)));
  if (!sif::looks_like_sif(path))
    throw FormatError(url +
                      ": what the server sent is not a SIF image (capsa runs SIF files from URLs; pull "
                      "other formats with the tool that made them)");
}

}  // namespace capsa::pull
