#include "registry/curl_handles.hpp"

#include "util/error.hpp"

namespace capsa::registry {

void ensure_curl_initialised() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("libcurl could not be initialised");
  });
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
