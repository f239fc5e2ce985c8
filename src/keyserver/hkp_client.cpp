#include "keyserver/hkp_client.hpp"

#include <curl/curl.h>

#include <memory>
#include <optional>

#include "registry/http.hpp"

namespace capsa::keyserver {
namespace {

using registry::HttpRequest;
using registry::HttpResponse;

std::string escape(const std::string& text) {
  std::unique_ptr<char, decltype(&curl_free)> escaped(
      curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size())), &curl_free);
  if (!escaped) throw Error("out of memory escaping a keyserver request");
  return escaped.get();
}

// A transport failure, said of the keyserver instead of the registry code's wording.
std::string unreachable(const Target& target, const registry::TransportError& e) {
  switch (e.kind()) {
    case registry::ErrorKind::kTls:
      return "TLS failure talking to keyserver " + target.url +
             " (its certificate is not trusted; an administrator may add it with --insecure)";
    case registry::ErrorKind::kStalled:
      return "keyserver " + target.url + " did not answer in time";
    default:
      return "keyserver " + target.url + " is unreachable (cannot connect or resolve its name)";
  }
}

// Text of an HTML answer (SKS answers /pks/add with a small page).
std::string text_of(const std::string& body) {
  std::string out;
  bool in_tag = false;
  for (char c : body) {
    if (c == '<') in_tag = true;
    if (!in_tag) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    if (c == '>') in_tag = false;
  }
  std::string squeezed;
  for (char c : out)
    if (c != ' ' || (!squeezed.empty() && squeezed.back() != ' ')) squeezed += c;
  while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
  return squeezed;
}

struct Outcome {
  std::optional<HttpResponse> response;
  std::string failure;  // when no 2xx answer came
  long status = 0;
};

Outcome ask(const Target& target, HttpRequest request) {
  registry::ClientOptions options;
  options.insecure_http = target.url.starts_with("http://");
  options.skip_tls_verify = target.insecure;
  options.connect_timeout = std::chrono::milliseconds(10'000);
  options.stall_seconds = 30;
  if (!target.authorization.empty()) request.headers.push_back("Authorization: " + target.authorization);
  request.max_body = 16 << 20;
  Outcome outcome;
  try {
    registry::HttpSession session(options, nullptr);
    HttpResponse response = session.perform(request);
    outcome.status = response.status;
    if (response.status / 100 == 2) {
      outcome.response = std::move(response);
    } else if (response.status == 401 || response.status == 403) {
      outcome.failure = "keyserver " + target.url + " refused the request (HTTP " + std::to_string(response.status) +
                        "): log in with `capsa keyserver login " + target.url + "`";
    } else {
      outcome.failure = "keyserver " + target.url + " answered HTTP " + std::to_string(response.status);
    }
  } catch (const registry::TransportError& e) {
    outcome.failure = unreachable(target, e);
  }
  return outcome;
}

}  // namespace

HkpClient::HkpClient(std::vector<Target> targets) : targets_(std::move(targets)) {
  if (targets_.empty()) throw Error("no keyserver is configured (see `capsa keyserver add`, or give --url)");
}

std::string HkpClient::lookup(const std::string& op, const std::string& search) {
  bool all_not_found = true;
  std::string failure;
  for (const Target& target : targets_) {
    HttpRequest request;
    request.url = target.url + "/pks/lookup?op=" + op + "&options=mr&search=" + escape(search);
    Outcome outcome = ask(target, request);
    if (outcome.response) {
      answered_by_ = target.url;
      return outcome.response->body;
    }
    all_not_found = all_not_found && outcome.status == 404;
    // The first real failure is the one worth reporting; a 404 further down says less.
    if (failure.empty() || outcome.status != 404) failure = outcome.failure;
  }
  if (all_not_found) {
    std::string where = targets_.front().url;
    if (targets_.size() > 1) where = std::to_string(targets_.size()) + " keyservers (" + where + ", ...)";
    throw KeyNotFound("no key matching " + search + " on " + where);
  }
  throw Error(failure);
}

std::string HkpClient::index(const std::string& search) { return lookup("index", search); }

std::string HkpClient::get(const std::string& search) { return lookup("get", search); }

std::string HkpClient::add(const std::string& armored) {
  const Target& target = targets_.front();
  HttpRequest request;
  request.method = HttpRequest::Method::kPostForm;
  request.url = target.url + "/pks/add";
  request.form_body = "keytext=" + escape(armored);
  Outcome outcome = ask(target, request);
  if (!outcome.response) throw Error(outcome.failure + " to /pks/add: the key was not accepted");
  answered_by_ = target.url;
  return text_of(outcome.response->body);
}

}  // namespace capsa::keyserver
