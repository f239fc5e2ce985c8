#include "registry_http.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_registry.hpp"

namespace capsa::test {

HttpResponse http_get(const std::string& url, const std::vector<std::string>& headers, const std::string& config) {
  TempDir dir;
  std::vector<std::string> argv = {"curl", "-sS", "--max-time", "30", "-K", "-", "--cacert",
                                   test_registry().ca_file, "-D", dir / "headers", "-o", dir / "body",
                                   "-w", "%{http_code}"};
  for (const auto& value : headers) {
    argv.push_back("-H");
    argv.push_back(value);
  }
  argv.push_back(url);
  const auto result = run_process(argv, config);
  EXPECT_EQ(result.exit_code, 0) << "curl " << url << ": " << result.err;
  HttpResponse response;
  response.status = std::atoi(result.out.c_str());
  response.headers = read_file(dir / "headers");
  // curl writes the headers of every response (e.g. a 100 Continue first).
  const auto last = response.headers.rfind("HTTP/");
  if (last != std::string::npos) response.headers.erase(0, last);
  response.body = read_file(dir / "body");
  return response;
}

namespace {
std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}
}  // namespace

std::string header(const HttpResponse& response, const std::string& name) {
  std::istringstream lines(response.headers);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon != std::string::npos && lower(line.substr(0, colon)) == lower(name)) {
      const auto value = line.find_first_not_of(' ', colon + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

std::string credentials_config(const std::string& user, const std::string& password) {
  return "user = \"" + user + ":" + password + "\"\n";
}

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace capsa::test
