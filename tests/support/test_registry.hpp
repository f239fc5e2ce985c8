#pragma once
// The test registries (tests/test_registries/start.sh) as a suite declared with
// `capsa_add_test_suite(NAME ... REGISTRY)` sees them.
#include <string>

namespace capsa::test {

struct TestRegistry {
  std::string plain;           // host:port, plain HTTP, no auth; holds every test image
  std::string token;           // host:port, HTTPS + Bearer tokens (same storage)
  std::string auth_realm;      // https://host:port/token, the token service
  std::string basic;           // host:port, HTTPS + Basic auth (same storage)
  std::string service;         // the `service` the token registry names in its challenge
  std::string ca_file;         // PEM CA that signed the HTTPS certificates
  std::string api_key;         // password for user `$oauthtoken` (and `short-lived`)
  std::string basic_user;      // credentials of the Basic registry
  std::string basic_password;  // contains a ':'
  std::string tools;           // tests/test_registries: umoci-unpack.sh, tree-manifest.py
};

// Read from $CAPSA_TEST_REGISTRY_STATE/env.json, written by start.sh; a test failure
// (and empty fields) when the suite was not declared with REGISTRY or the servers are down.
const TestRegistry& test_registry();

}  // namespace capsa::test
