#include "registry/challenge.hpp"

#include <gtest/gtest.h>

#include "oci/digest.hpp"
#include "registry/http.hpp"
#include "registry/options.hpp"
#include "util/error.hpp"

namespace capsa::registry {
namespace {

TEST(Challenge, BearerWithQuotedCommasInScope) {
  auto challenges = parse_challenges(
      R"(Bearer realm="https://auth.example/token",service="registry.example",scope="repository:ns/img:pull,push")");
  ASSERT_EQ(challenges.size(), 1u);
  EXPECT_EQ(challenges[0].scheme, "bearer");
  EXPECT_EQ(challenges[0].param("realm"), "https://auth.example/token");
  EXPECT_EQ(challenges[0].param("service"), "registry.example");
  EXPECT_EQ(challenges[0].param("scope"), "repository:ns/img:pull,push");
}

TEST(Challenge, SeveralChallengesCaseInsensitiveWithEscapesAndTokens) {
  auto challenges = parse_challenges(
      R"(BASIC Realm="say \"hi\", please" , bearer REALM=https://a/t, service = svc ,Negotiate)");
  ASSERT_EQ(challenges.size(), 3u);
  EXPECT_EQ(challenges[0].scheme, "basic");
  EXPECT_EQ(challenges[0].param("realm"), "say \"hi\", please");
  EXPECT_EQ(challenges[1].scheme, "bearer");
  EXPECT_EQ(challenges[1].param("realm"), "https://a/t");
  EXPECT_EQ(challenges[1].param("service"), "svc");
  EXPECT_EQ(challenges[2].scheme, "negotiate");
}

TEST(Challenge, FindsSchemeAcrossHeaderValues) {
  auto found = find_challenge({R"(Basic realm="x")", R"(Bearer realm="https://r/token")"}, "Bearer");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->param("realm"), "https://r/token");
  EXPECT_FALSE(find_challenge({R"(Basic realm="x")"}, "bearer"));
}

TEST(Challenge, GarbageNeverThrowsOrHangs) {
  for (const char* input : {"", ",,,", "\"", "Bearer realm=\"unterminated", "Bearer =x", "@@@", "Bearer realm=@@,",
                            "Basic realm=", "  Bearer   ,  realm = \"a\\"}) {
    EXPECT_NO_THROW(parse_challenges(input)) << input;
  }
  auto unterminated = parse_challenges("Bearer realm=\"https://r/t");
  ASSERT_EQ(unterminated.size(), 1u);
  EXPECT_EQ(unterminated[0].param("realm"), "https://r/t");
}

TEST(ContentRange, OnlyWellFormedRangesParse) {
  auto range = parse_content_range("bytes 1048576-3145727/3145728");
  ASSERT_TRUE(range);
  EXPECT_EQ(range->first, 1048576u);
  EXPECT_EQ(range->last, 3145727u);
  EXPECT_EQ(range->total, 3145728u);
  auto unknown_total = parse_content_range("bytes 0-9/*");
  ASSERT_TRUE(unknown_total);
  EXPECT_FALSE(unknown_total->total);
  for (const char* bad : {"", "bytes", "bytes 5-4/10", "bytes 0-9/9", "bytes */10", "items 0-9/10", "bytes 0-9/10x",
                          "bytes -1-9/10", "bytes 0-99999999999999999999999/1"})
    EXPECT_FALSE(parse_content_range(bad)) << bad;
}

TEST(Options, NoHttpsFromEitherVariable) {
  auto env_of = [](std::map<std::string, std::string> values) {
    return [values](const std::string& name) -> std::optional<std::string> {
      auto it = values.find(name);
      return it == values.end() ? std::nullopt : std::optional(it->second);
    };
  };
  EXPECT_FALSE(nohttps_from_environment(env_of({})));
  EXPECT_TRUE(nohttps_from_environment(env_of({{"SINGULARITY_NOHTTPS", "1"}})));
  EXPECT_TRUE(nohttps_from_environment(env_of({{"APPTAINER_NOHTTPS", "True"}})));
  EXPECT_FALSE(nohttps_from_environment(env_of({{"APPTAINER_NOHTTPS", "0"}})));
  auto options = options_from_environment(env_of({{"CAPSA_REGISTRY_CA", "/etc/site-ca.pem"}}));
  EXPECT_EQ(options.ca_file, "/etc/site-ca.pem");
  EXPECT_FALSE(options.insecure_http);
}

}  // namespace
}  // namespace capsa::registry
