#include "runtime/overlay_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "support/temp_dir.hpp"

namespace capsa::runtime::testing {

test::ProcessResult e2fs_tool(const std::vector<std::string>& argv) {
  std::vector<std::string> full = {"env", "PATH=/usr/sbin:/sbin:/usr/bin:/bin"};
  full.insert(full.end(), argv.begin(), argv.end());
  return test::run_process(full);
}

void make_apptainer_ext3_overlay(const std::string& path, int mib) {
  test::TempDir staging;
  std::filesystem::create_directory(staging / "upper");
  std::filesystem::create_directory(staging / "work");
  ASSERT_EQ(test::run_process({"truncate", "-s", std::to_string(mib) + "M", path}).exit_code, 0);
  auto made = e2fs_tool({"mkfs.ext3", "-q", "-d", staging.path(), path});
  ASSERT_EQ(made.exit_code, 0) << made.err;
}

long ext3_owner(const std::string& image, const std::string& inside) {
  auto r = e2fs_tool({"debugfs", "-R", "stat " + inside, image});
  std::smatch m;
  static const std::regex user(R"(User:\s+(\d+))");
  if (!std::regex_search(r.out, m, user)) return -1;
  return std::stol(m[1]);
}

std::string ext3_file(const std::string& image, const std::string& inside) {
  return e2fs_tool({"debugfs", "-R", "cat " + inside, image}).out;
}

}  // namespace capsa::runtime::testing
