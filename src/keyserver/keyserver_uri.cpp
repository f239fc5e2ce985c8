#include "keyserver/keyserver_uri.hpp"

#include <curl/curl.h>

#include <memory>

#include "util/error.hpp"

namespace capsa::keyserver {
namespace {

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
struct PartDeleter {
  void operator()(char* part) const { curl_free(part); }
};

std::string part(CURLU* url, CURLUPart which) {
  char* raw = nullptr;
  if (curl_url_get(url, which, &raw, 0) != CURLUE_OK || raw == nullptr) return "";
  std::unique_ptr<char, PartDeleter> owned(raw);
  return raw;
}

struct Parsed {
  std::string scheme, host, port, path;
};

// libcurl's URL parser, so that what capsa calls a host is what libcurl connects to.
Parsed parse(const std::string& uri) {
  auto bad = [&](const std::string& why) {
    return Error("keyserver URI \"" + uri + "\" is not valid (" + why +
                 "): give http://, https://, hkp:// or hkps://HOST[:PORT]");
  };
  if (uri.find("://") == std::string::npos) throw bad("no scheme");
  std::unique_ptr<CURLU, UrlDeleter> url(curl_url());
  if (!url) throw Error("out of memory parsing a keyserver URI");
  if (curl_url_set(url.get(), CURLUPART_URL, uri.c_str(), CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
    throw bad("not a URL");
  Parsed parsed{part(url.get(), CURLUPART_SCHEME), part(url.get(), CURLUPART_HOST), part(url.get(), CURLUPART_PORT),
                part(url.get(), CURLUPART_PATH)};
  if (!part(url.get(), CURLUPART_USER).empty()) throw bad("credentials belong in `capsa keyserver login`");
  if (!part(url.get(), CURLUPART_QUERY).empty()) throw bad("a query");
  if (parsed.host.empty()) throw bad("no host");
  if (parsed.scheme == "hkp") {
    parsed.scheme = "http";
    if (parsed.port.empty()) parsed.port = "11371";
  } else if (parsed.scheme == "hkps") {
    parsed.scheme = "https";
  } else if (parsed.scheme != "http" && parsed.scheme != "https") {
    throw bad("unsupported scheme " + parsed.scheme);
  }
  if (parsed.port == (parsed.scheme == "http" ? "80" : "443")) parsed.port.clear();
  while (!parsed.path.empty() && parsed.path.back() == '/') parsed.path.pop_back();
  return parsed;
}

}  // namespace

std::string normalize_keyserver_uri(const std::string& uri) {
  const Parsed p = parse(uri);
  return p.scheme + "://" + p.host + (p.port.empty() ? "" : ":" + p.port) + p.path;
}

bool same_keyserver(const std::string& a, const std::string& b) {
  try {
    const Parsed x = parse(a), y = parse(b);
    return x.scheme == y.scheme && x.host == y.host && x.port == y.port;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace capsa::keyserver
