#include "registry/curl_handles.hpp"

#include "util/error.hpp"

#include <openssl/x509.h>
#include <unistd.h>

#include <array>
#include <cstdlib>

namespace capsa::registry {

void ensure_curl_initialised() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("libcurl could not be initialised");
  });
}

void use_system_ca_bundle(CURL* easy) {
  static const char* const bundle = []() -> const char* {
    if (curl_version_info(CURLVERSION_NOW)->cainfo != nullptr) return nullptr;
    if (std::getenv("SSL_CERT_FILE") != nullptr || std::getenv("SSL_CERT_DIR") != nullptr) return nullptr;
    if (::access(X509_get_default_cert_file(), R_OK) == 0) return nullptr;
    // Debian and Ubuntu, RHEL and Fedora, SUSE, older RHEL, Alpine and others.
    static constexpr std::array<const char*, 5> known = {"/etc/ssl/certs/ca-certificates.crt",
                                                         "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
                                                         "/etc/pki/tls/cacert.pem", "/etc/ssl/cert.pem"};
    for (const char* path : known)
      if (::access(path, R_OK) == 0) return path;
    return nullptr;
  }();
  if (bundle != nullptr) curl_easy_setopt(easy, CURLOPT_CAINFO, bundle);
}

EasyHandle make_easy_handle() {
  ensure_curl_initialised();
  EasyHandle handle(curl_easy_init());
  if (!handle) throw Error("libcurl could not create a transfer handle");
  return handle;
}

HeaderList::HeaderList(const std::vector<std::string>& lines) {
  for (const auto& line : lines) append(line);
}

void HeaderList::append(const std::string& line) {
  curl_slist* grown = curl_slist_append(list_, line.c_str());
  if (grown == nullptr) throw Error("out of memory building HTTP headers");
  list_ = grown;
}

ShareHandle::ShareHandle() {
  ensure_curl_initialised();
  share_ = curl_share_init();
  if (share_ == nullptr) throw Error("libcurl could not create a share handle");
  curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &ShareHandle::lock);
  curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &ShareHandle::unlock);
  curl_share_setopt(share_, CURLSHOPT_USERDATA, this);
  curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
}

ShareHandle::~ShareHandle() { curl_share_cleanup(share_); }

void ShareHandle::lock(CURL*, curl_lock_data data, curl_lock_access, void* self) {
  static_cast<ShareHandle*>(self)->mutexes_.at(static_cast<std::size_t>(data)).lock();
}

void ShareHandle::unlock(CURL*, curl_lock_data data, void* self) {
  static_cast<ShareHandle*>(self)->mutexes_.at(static_cast<std::size_t>(data)).unlock();
}

}  // namespace capsa::registry
