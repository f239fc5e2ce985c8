#pragma once
// The fake NVIDIA and ROCm drivers built by tests/fixtures/make-fake-nvidia.sh and
// make-fake-rocm.sh, and ld.so caches naming their libraries, made by the real ldconfig
// for this test process.
#include <cstdio>
#include <string>
#include <vector>

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

// A fake driver tree as the host's driver: its ld.so cache, its programs first on PATH, its
// dev/ as the host's /dev (CAPSA_DEV_DIR).
struct FakeDriverHost {
  std::string ldso_cache;
  std::string tree;  // the fixture's root: bin/ and dev/ below it

  // capsa ARGS... as on such a host, with ENV added.
  ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) const {
    std::vector<std::string> argv = {"env", "CAPSA_LDSO_CACHE=" + ldso_cache,
                                     "PATH=" + tree + "/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                     "CAPSA_DEV_DIR=" + tree + "/dev"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(capsa_binary());
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, "", 60);
  }
};

// exec FLAGS... IMAGE sh -c SCRIPT
inline std::vector<std::string> exec_script(const std::vector<std::string>& flags, const std::string& image,
                                            const std::string& script) {
  std::vector<std::string> args = {"exec"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {image, "sh", "-c", script});
  return args;
}

}  // namespace capsa::test
