// --env-file parsing: what reaches the injected variables (environment_test.cpp checks
// what the container then sees).
#include "runtime/environment.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(EnvFile, AssignmentsInOrderWithCommentsExportAndOneLevelOfQuotes) {
  const std::string text =
      "# a comment\n"
      "FOO=bar\n"
      "   \n"
      "  export BAZ=\"two words\"\n"
      "QUX='single'\n"
      "EMPTY=\n"
      "RAW=$(id) `id` ${HOME}\n"
      "HALF=\"open\n"
      "EQ=a=b\n";
  EXPECT_EQ(parse_env_file(text, "--env-file f"),
            (Pairs{{"FOO", "bar"}, {"BAZ", "two words"}, {"QUX", "single"}, {"EMPTY", ""},
                   {"RAW", "$(id) `id` ${HOME}"}, {"HALF", "\"open"}, {"EQ", "a=b"}}));
}

TEST(EnvFile, LinesThatAreNotAssignmentsNameTheFile) {
  for (const char* bad : {"just words\n", "1ABC=x\n", "A-B=x\n", "=x\n", "export\n"}) {
    try {
      parse_env_file(bad, "--env-file /tmp/e");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--env-file /tmp/e: "), std::string::npos) << e.what();
    }
  }
}

TEST(EnvFile, ValuesAreInjectedUnevaluatedAndReservedNamesAreRefused) {
  test::TempDir dir;
  EnvRequest request;
  request.env_files = {dir.write("env", "A=it's $(x)\nHOME=/elsewhere\n")};
  request.home = "/home/u";
  request.image_path = "/images/x.sif";
  ComposedEnvironment composed = compose_environment(request);
  EXPECT_EQ(composed.injected.at("A"), "it's $(x)");
  EXPECT_EQ(composed.injected.count("HOME"), 0u);
  ASSERT_EQ(composed.warnings.size(), 1u);
  EXPECT_NE(composed.warnings[0].find("not setting HOME from --env-file"), std::string::npos);
}

}  // namespace
}  // namespace capsa::runtime
