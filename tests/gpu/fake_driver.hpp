#pragma once
// The fake NVIDIA and ROCm drivers built by tests/fixtures/make-fake-nvidia.sh and
// make-fake-rocm.sh, and ld.so caches naming their libraries, made by the real ldconfig
// for this test process.
#include <cstdio>
#include <string>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::test {

inline std::string fake_nvidia(const std::string& relative = "") {
  return built_fixtures() + "/fake-nvidia" + (relative.empty() ? "" : "/" + relative);
}

// The cache lists the fixture's lib/ and a libnvidia-cfg.so.1 deleted after ldconfig ran.
inline std::string fake_cache() {
  static TempDir dir;
  static std::string cache = [] {
    std::string gone = dir / "gone";
    run_process({"mkdir", "-p", gone});
    run_process({"cp", fake_nvidia("gone/libnvidia-cfg.so.1"), gone});
    std::string conf = dir.write("ld.so.conf", fake_nvidia("lib") + "\n" + gone + "\n");
    auto made = run_process({"/sbin/ldconfig", "-X", "-C", dir / "ld.so.cache", "-f", conf});
    if (made.exit_code != 0) std::fprintf(stderr, "ldconfig failed: %s\n", made.err.c_str());
    std::remove((gone + "/libnvidia-cfg.so.1").c_str());
    return dir / "ld.so.cache";
  }();
  return cache;
}

inline std::string fake_rocm(const std::string& relative = "") {
  return built_fixtures() + "/fake-rocm" + (relative.empty() ? "" : "/" + relative);
}

// The cache lists the ROCm fixture's lib/ (and the host's default directories).
inline std::string fake_rocm_cache() {
  static TempDir dir;
  static std::string cache = [] {
    std::string conf = dir.write("ld.so.conf", fake_rocm("lib") + "\n");
    auto made = run_process({"/sbin/ldconfig", "-X", "-C", dir / "ld.so.cache", "-f", conf});
    if (made.exit_code != 0) std::fprintf(stderr, "ldconfig failed: %s\n", made.err.c_str());
    return dir / "ld.so.cache";
  }();
  return cache;
}

}  // namespace capsa::test
