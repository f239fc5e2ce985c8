#pragma once
// Where the suites find their inputs; set by ctest (cmake/CapsaTesting.cmake).
#include <string>

namespace capsa::test {

std::string upstream_fixtures();  // tests/fixtures/upstream (vendored upstream files)
std::string built_fixtures();     // fixtures made by tests/fixtures/make-*.sh
std::string capsa_binary();       // the CLI under test
std::string sif_fixture(const std::string& relative);  // upstream_fixtures()/sif/<relative>

// Skips the current test with a reason when an external tool is not on PATH.
bool have_program(const std::string& name);

}  // namespace capsa::test
