#include "build/download.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "registry/curl_handles.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::build {
namespace {

size_t write_to_fd(char* data, size_t size, size_t count, void* fd) {
  size_t total = size * count;
  for (size_t done = 0; done < total;) {
    ssize_t n = ::write(*static_cast<int*>(fd), data + done, total - done);
    if (n <= 0) return 0;  // curl then fails the transfer with CURLE_WRITE_ERROR
    done += static_cast<size_t>(n);
  }
  return total;
}

}  // namespace

void download_file(const std::string& url, const std::string& path) {
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0 && url.rfind("file://", 0) != 0)
    throw Error(url + ": not an http://, https:// or file:// URL");
  registry::ensure_curl_initialised();
  registry::EasyHandle curl(curl_easy_init());
  if (!curl) throw Error("cannot start a download of " + url);
  UniqueFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out) throw_errno(path);
  int fd = out.get();
  char error[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  registry::use_system_ca_bundle(curl.get());
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https,file");
  curl_easy_setopt(curl.get(), CURLOPT_REDIR_PROTOCOLS_STR, "http,https");  // never from the web to a local file
  curl_easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, write_to_fd);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &fd);
  curl_easy_setopt(curl.get(), CURLOPT_ERRORBUFFER, error);
  CURLcode result = curl_easy_perform(curl.get());
  if (result != CURLE_OK) {
    ::unlink(path.c_str());
    throw Error("downloading " + url + ": " + (error[0] != '\0' ? error : curl_easy_strerror(result)));
  }
}

}  // namespace capsa::build
