// Malformed SIF files: each must give one clear line naming the file and the problem,
// a non-zero exit code from the CLI, and never a crash or a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "sif/image.hpp"
#include "sif/layout.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"

namespace capsa::sif {
namespace {

using test::TempDir;

struct Corruption {
  std::string name;
  std::string expected_message;  // a phrase the error must contain
  std::function<void(std::string&)> apply;
};

void put_i64(std::string& bytes, std::size_t at, std::int64_t value) {
  for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<char>(static_cast<std::uint64_t>(value) >> (8 * i));
}

// one-group.sif: object 1 (Raw, 32768+4) and object 2 (Squashfs PrimSys, 36864+4096).
constexpr std::size_t kDesc1 = 4096, kDesc2 = 4096 + 585;
constexpr std::size_t kOffsetField = 17, kSizeField = 25;

std::vector<Corruption> corruptions() {
  return {
      {"empty", "file is empty", [](std::string& b) { b.clear(); }},
      {"shorter-than-header", "shorter than the 128-byte SIF header", [](std::string& b) { b.resize(100); }},
      {"header-only", "descriptor table", [](std::string& b) { b.resize(128); }},
      {"truncated-in-descriptors", "descriptor table", [](std::string& b) { b.resize(5000); }},
      {"truncated-in-data", "truncated", [](std::string& b) { b.resize(38000); }},
      {"wrong-magic", "no SIF_MAGIC", [](std::string& b) { std::memcpy(&b[32], "NOT_MAGIC", 9); }},
      {"not-a-sif-at-all", "no SIF_MAGIC", [](std::string& b) { b.assign(4096, 'x'); }},
      {"wrong-version", "unsupported SIF version \"02\"", [](std::string& b) { b[43] = '2'; }},
      {"huge-descriptor-count", "descriptor count", [](std::string& b) { put_i64(b, 88, 1LL << 40); }},
      {"negative-descriptor-count", "descriptor count", [](std::string& b) { put_i64(b, 88, -1); }},
      {"descriptor-area-too-small", "cannot hold", [](std::string& b) { put_i64(b, 104, 585); }},
      {"descriptors-past-end", "lies outside the file", [](std::string& b) { put_i64(b, 96, 1LL << 40); }},
      {"descriptors-inside-header", "overlaps the 128-byte header", [](std::string& b) { put_i64(b, 96, 16); }},
      {"data-section-past-end", "data section", [](std::string& b) { put_i64(b, 120, 1LL << 40); }},
      {"object-past-end", "extends past the end of the file",
       [](std::string& b) { put_i64(b, kDesc2 + kOffsetField, 1LL << 40); }},
      {"object-size-overflows", "extends past the end of the file",
       [](std::string& b) { put_i64(b, kDesc2 + kSizeField, INT64_MAX); }},
      {"object-negative-offset", "extends past the end of the file",
       [](std::string& b) { put_i64(b, kDesc1 + kOffsetField, -4096); }},
      {"object-over-descriptors", "overlaps the SIF header or descriptor table",
       [](std::string& b) { put_i64(b, kDesc1 + kOffsetField, 4096); }},
      {"objects-overlap", "overlap", [](std::string& b) { put_i64(b, kDesc1 + kSizeField, 5000); }},
      {"duplicate-ids", "share ID", [](std::string& b) { b[kDesc2 + 5] = 1; }},
  };
}

class BadSif : public ::testing::TestWithParam<Corruption> {};

TEST_P(BadSif, IsRejectedWithOneClearLine) {
  const Corruption& c = GetParam();
  TempDir dir;
  std::string bytes = test::read_file(test::sif_fixture("images/one-group.sif"));
  c.apply(bytes);
  std::string path = dir.write(c.name + ".sif", bytes);

  try {
    Image::open(path);
    FAIL() << c.name << ": accepted";
  } catch (const FormatError& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.expected_message), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }

  for (const char* command : {"list", "header"}) {
    auto result = test::run_process({test::capsa_binary(), "sif", command, path}, "", 30);
    EXPECT_EQ(result.exit_code, 1) << command << ": " << result.err;
    EXPECT_EQ(result.out, "") << "no partial output";
    EXPECT_EQ(result.err.rfind("capsa: error: " + path + ": ", 0), 0u) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Corruptions, BadSif, ::testing::ValuesIn(corruptions()),
                         [](const auto& param_info) {
                           std::string name = param_info.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(BadSifFile, MissingFileNamesThePath) {
  auto result = test::run_process({test::capsa_binary(), "sif", "list", "/nonexistent/x.sif"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "capsa: error: /nonexistent/x.sif: No such file or directory\n");
}

TEST(BadSifFile, ADirectoryIsNotAnImage) {
  TempDir dir;
  auto result = test::run_process({test::capsa_binary(), "sif", "header", dir.path()});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find(dir.path()), std::string::npos) << result.err;
}

TEST(BadSifFile, InvalidObjectIdIsAUsageError) {
  auto result = test::run_process({test::capsa_binary(), "sif", "info", "x1", test::sif_fixture("images/one-group.sif")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("invalid object ID \"x1\""), std::string::npos) << result.err;
}

}  // namespace
}  // namespace capsa::sif
