#pragma once
// CDI spec directories for the tests: the specs of tests/gpu/cdi (shaped like the ones
// `nvidia-ctk cdi generate` writes) pointing at the fake NVIDIA driver, and the fake
// nvidia-ctk hook, copied into a fresh directory.
#include <string>

#include "fake_driver.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::test {

inline std::string cdi_source(const std::string& name) {
  return std::string(CAPSA_TEST_SOURCE_DIR) + "/tests/gpu/cdi/" + name;
}

inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// DIR/hook/nvidia-ctk (the fake hook) and DIR/cdi/NAME made from tests/gpu/cdi/NAME.in
// (or none when `spec` is empty); returns DIR/cdi.
inline std::string cdi_dir(const TempDir& dir, const std::string& spec, const std::string& hook = "") {
  run_process({"mkdir", "-p", dir / "cdi", dir / "hook"});
  run_process({"cp", cdi_source("fake-nvidia-ctk.sh"), dir / "hook/nvidia-ctk"});
  run_process({"chmod", "-R", "a+rX", dir.path()});
  if (!spec.empty()) {
    std::string text = read_file(cdi_source(spec + ".in"));
    text = replace_all(text, "@FAKE_NVIDIA@", fake_nvidia());
    text = replace_all(text, "@HOOK@", hook.empty() ? dir / "hook/nvidia-ctk" : hook);
    dir.write("cdi/" + spec, text);
  }
  return dir / "cdi";
}

}  // namespace capsa::test
