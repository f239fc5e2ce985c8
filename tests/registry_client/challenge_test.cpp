#include "registry/challenge.hpp"

#include <gtest/gtest.h>

#include "registry/options.hpp"

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
