#include "support/test_registry.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

namespace capsa::test {
namespace {

TestRegistry load() {
  TestRegistry registry;
  const char* state = std::getenv("CAPSA_TEST_REGISTRY_STATE");
  const char* tools = std::getenv("CAPSA_TEST_REGISTRY_TOOLS");
  if (state == nullptr || tools == nullptr) {
    ADD_FAILURE() << "CAPSA_TEST_REGISTRY_STATE is not set; declare the suite with "
                     "capsa_add_test_suite(... REGISTRY) and run it through ctest";
    return registry;
  }
  const std::string path = std::string(state) + "/env.json";
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << path << " is missing; the test_registries.start test did not run or failed";
    return registry;
  }
  const auto values = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!values.is_object()) {
    ADD_FAILURE() << path << " is not a JSON object";
    return registry;
  }
  auto get = [&](const char* key) { return values.value(key, std::string()); };
  registry.plain = get("CAPSA_TEST_REGISTRY");
  registry.token = get("CAPSA_TEST_REGISTRY_TOKEN");
  registry.auth_realm = get("CAPSA_TEST_REGISTRY_AUTH");
  registry.basic = get("CAPSA_TEST_REGISTRY_BASIC");
  registry.service = get("CAPSA_TEST_REGISTRY_SERVICE");
  registry.ca_file = get("CAPSA_TEST_CA");
  registry.api_key = get("CAPSA_TEST_API_KEY");
  registry.basic_user = get("CAPSA_TEST_BASIC_USER");
  registry.basic_password = get("CAPSA_TEST_BASIC_PASSWORD");
  registry.tools = tools;
  return registry;
}

}  // namespace

const TestRegistry& test_registry() {
  static const TestRegistry registry = load();
  return registry;
}

}  // namespace capsa::test
