#pragma once
// HTTP requests to the test registries with the curl CLI (a client independent of the
// capsa code under test), and the small helpers the registry tests share.
#include <string>
#include <vector>

namespace capsa::test {

struct HttpResponse {
  int status = 0;
  std::string headers;  // of the last response only
  std::string body;
};

// GET `url`, trusting the test CA. `config` is a curl config (e.g. from
// credentials_config) given on stdin, so that credentials never appear on a command line.
HttpResponse http_get(const std::string& url, const std::vector<std::string>& headers = {},
                      const std::string& config = "");

// The value of header `name` (case-insensitive), "" when absent.
std::string header(const HttpResponse& response, const std::string& name);

// A curl config line sending Basic credentials.
std::string credentials_config(const std::string& user, const std::string& password);

std::string sha256_hex(const std::string& data);

}  // namespace capsa::test
