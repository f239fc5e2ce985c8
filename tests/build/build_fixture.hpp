#pragma once
// The `capsa build` test fixture shared by the build suite's files: capsa run with a
// private cache and build directory, and the tools that look at a built SIF from outside.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "sif/image.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::build {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

inline bool is_root() { return ::geteuid() == 0; }

// Apt inside a Debian image reaches the mirror the host uses (docs/build.md).
inline std::vector<std::string> apt_binds() {
  std::vector<std::string> binds;
  for (const char* path : {"/etc/apt/sources.list", "/etc/apt/sources.list.d", "/etc/resolv.conf"})
    if (::access(path, R_OK) == 0) binds.insert(binds.end(), {"--bind", std::string(path) + ":" + path + ":ro"});
  return binds;
}

class Build : public ::testing::Test {
 protected:
  TempDir work;
  std::string cache = work / "cache";
  std::string tmp = work / "tmp";

  void SetUp() override { std::filesystem::create_directories(tmp); }

  // capsa with a private cache, the build directories in `tmp`, the test CA trusted.
  ProcessResult capsa(std::vector<std::string> args, std::vector<std::string> env = {}, int timeout = 900) {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + cache, "TMPDIR=" + tmp,
                                     "CAPSA_REGISTRY_CA=" + test::test_registry().ca_file, "APPTAINER_NOHTTPS=1"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(test::capsa_binary());
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, "", timeout);
  }
  std::string registry(const std::string& repo) { return test::test_registry().plain + "/" + repo; }
  std::string def(const std::string& name, const std::string& text) { return work.write(name, text); }
  // `capsa build SIF RECIPE` whose %post uses apt from the host's mirror (apt_binds).
  ProcessResult build_with_apt(const std::string& sif, const std::string& recipe, std::vector<std::string> env = {}) {
    std::vector<std::string> args = {"build"};
    for (auto& b : apt_binds()) args.push_back(b);
    args.insert(args.end(), {sif, recipe});
    return capsa(args, std::move(env));
  }

  // The build directories left in $TMPDIR (there must be none after any build).
  std::vector<std::string> leftovers() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(tmp)) names.push_back(entry.path().filename());
    return names;
  }
};

// The primary partition of a SIF, listed with numeric owners: "mode uid/gid ... path".
inline std::string squashfs_listing(const std::string& sif, const TempDir& dir) {
  sif::Image image = sif::Image::open(sif);
  std::string part = dir / "partition.squashfs";
  auto dump =
      run_process({"sh", "-c", "\"$0\" sif dump " + std::to_string(image.primary_partition()->id) + " \"$1\" > \"$2\"",
                   test::capsa_binary(), sif, part});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  auto listing = run_process({"unsquashfs", "-lln", "-d", "", part}, "", 300);
  EXPECT_EQ(listing.exit_code, 0) << listing.err;
  std::filesystem::remove(part);
  return listing.out;
}

// The owner column of one path in a squashfs listing ("" when absent).
inline std::string owner_of(const std::string& listing, const std::string& path) {
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    if (line.size() < path.size() || line.compare(line.size() - path.size(), path.size(), path) != 0) continue;
    if (line.size() > path.size() && line[line.size() - path.size() - 1] != ' ') continue;
    std::istringstream words(line);
    std::string mode, owner;
    words >> mode >> owner;
    return owner;
  }
  return "";
}

}  // namespace capsa::build
