#pragma once
// Shared by the registry client suites: options with short waits whose log is kept (to check
// it for secrets), and catching the RegistryError a call must throw.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "registry/client.hpp"
#include "registry/testbed.hpp"

namespace capsa::registry {

#define REQUIRE_TESTBED()                                                         \
  test::Testbed* bed = test::testbed();                                           \
  if (bed == nullptr) GTEST_SKIP() << "the test registries are not configured"

// Options for tests: short waits, and every log line kept to check it for secrets.
struct Logged {
  ClientOptions options;
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
  explicit Logged(bool plain_http) {
    options.insecure_http = plain_http;
    options.backoff_base = std::chrono::milliseconds(20);
    options.stall_seconds = 2;
    options.connect_timeout = std::chrono::seconds(5);
    auto mutex = std::make_shared<std::mutex>();
    options.log = [lines = lines, mutex](std::string_view line) {
      std::lock_guard lock(*mutex);
      lines->emplace_back(line);
    };
  }
  std::string all() const {
    std::string text;
    for (const auto& line : *lines) text += line + "\n";
    return text;
  }
};

inline Logged tls_options(const test::Testbed& bed) {
  Logged logged(false);
  logged.options.ca_file = bed.registries.ca_file;
  return logged;
}

inline Credentials ngc(const std::string& user, const std::string& key) { return {user, key, "", "the test"}; }

// The error a call throws, or a test failure.
template <typename Body>
RegistryError error_of(Body&& body) {
  try {
    body();
  } catch (const RegistryError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a RegistryError";
  return RegistryError(ErrorKind::kProtocol, "none");
}

}  // namespace capsa::registry
