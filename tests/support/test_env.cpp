#include "support/test_env.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace capsa::test {
namespace {
std::string required_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    ADD_FAILURE() << name << " is not set; run the suites through ctest";
    return "/nonexistent";
  }
  return value;
}
}  // namespace

std::string upstream_fixtures() { return required_env("CAPSA_UPSTREAM_FIXTURES"); }
std::string built_fixtures() { return required_env("CAPSA_TEST_FIXTURES"); }
std::string capsa_binary() { return required_env("CAPSA_BINARY"); }
std::string sif_fixture(const std::string& relative) { return upstream_fixtures() + "/sif/" + relative; }

bool have_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  return false;
}

}  // namespace capsa::test
