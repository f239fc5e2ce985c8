#pragma once
// RAII owners of libcurl handles. curl_global_init runs once per process before the first
// handle (it is not thread-safe itself, so it must not race with threads making handles).

#include <curl/curl.h>

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace capsa::registry {

void ensure_curl_initialised();

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
// Points `easy` at the distribution's CA bundle when neither libcurl nor OpenSSL knows one:
// the portable binaries' static libcurl has none compiled in, and their OpenSSL's default
// (/usr/lib/ssl, Debian's) is missing on RHEL-like systems (/etc/pki/tls). SSL_CERT_FILE and
// SSL_CERT_DIR, when set, are OpenSSL's to honour and win. A no-op for Debian's libcurl.
void use_system_ca_bundle(CURL* easy);

EasyHandle make_easy_handle();

// A curl_slist of request headers; curl keeps only the pointer, so it must outlive perform.
class HeaderList {
 public:
  HeaderList() = default;
  explicit HeaderList(const std::vector<std::string>& lines);
  HeaderList(const HeaderList&) = delete;
  HeaderList& operator=(const HeaderList&) = delete;
  ~HeaderList() { curl_slist_free_all(list_); }
  void append(const std::string& line);
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// DNS cache and TLS sessions shared by every handle of one client, locked for use across
// threads. The connection cache is deliberately not shared: libcurl documents sharing it
// between concurrently running threads as unsupported; each worker reuses its own handle,
// and so its own connections, instead.
class ShareHandle {
 public:
  ShareHandle();
  ShareHandle(const ShareHandle&) = delete;
  ShareHandle& operator=(const ShareHandle&) = delete;
  ~ShareHandle();
  CURLSH* get() const { return share_; }

 private:
  static void lock(CURL*, curl_lock_data data, curl_lock_access, void* self);
  static void unlock(CURL*, curl_lock_data data, void* self);
  CURLSH* share_ = nullptr;
  std::array<std::mutex, CURL_LOCK_DATA_LAST> mutexes_;
};

}  // namespace capsa::registry
