// The pure parts of the library push: push destinations with several tags, the API version
// ordering that chooses the v2 upload and tags, and the error text taken from an answer.
#include <gtest/gtest.h>

#include "library/api.hpp"
#include "library/push.hpp"
#include "library/search.hpp"
#include "util/error.hpp"

namespace capsa::library {
namespace {

TEST(LibraryPushTarget, TakesSeveralTagsAndNeedsAllThreeNames) {
  auto target = parse_push_target("library://capsa/tests/box:1.0,stable");
  EXPECT_EQ(target.ref.entity, "capsa");
  EXPECT_EQ(target.ref.collection, "tests");
  EXPECT_EQ(target.ref.container, "box");
  EXPECT_EQ(target.tags, (std::vector<std::string>{"1.0", "stable"}));
  EXPECT_EQ(parse_push_target("library://capsa/tests/box").tags, std::vector<std::string>{"latest"});
  auto hosted = parse_push_target("library://lib.example.org/capsa/tests/box:2");
  EXPECT_EQ(hosted.ref.host, "lib.example.org");
  EXPECT_EQ(hosted.tags, std::vector<std::string>{"2"});
  EXPECT_THROW(parse_push_target("library://tests/box:1.0"), FormatError);
  EXPECT_THROW(parse_push_target("library://capsa/tests/box:1.0,"), FormatError);
  EXPECT_THROW(parse_push_target("library://capsa/tests/box@sha256:" + std::string(64, 'a')), FormatError);
  EXPECT_THROW(parse_push_target("oras://capsa/tests/box"), FormatError);
}

TEST(LibraryApiVersion, FollowsSemanticVersioningPrecedence) {
  EXPECT_TRUE(api_at_least("2.0.0", "2.0.0-alpha.2"));
  EXPECT_TRUE(api_at_least("2.0.0-alpha.2", "2.0.0-alpha.1"));
  EXPECT_FALSE(api_at_least("2.0.0-alpha.1", "2.0.0-alpha.2"));
  EXPECT_TRUE(api_at_least("2.0.0-alpha.10", "2.0.0-alpha.2")) << "numeric identifiers compare as numbers";
  EXPECT_TRUE(api_at_least("2.0.0-beta", "2.0.0-alpha.2"));
  EXPECT_FALSE(api_at_least("1.9.9", "2.0.0-alpha.1"));
  EXPECT_TRUE(api_at_least("v2.1.0+build5", "2.0.0-alpha.2"));
  EXPECT_FALSE(api_at_least("", "2.0.0-alpha.1")) << "no version: the oldest API";
  EXPECT_FALSE(api_at_least("two", "2.0.0-alpha.1"));
}

TEST(LibraryApiError, TheMessageOnOneShortLine) {
  EXPECT_EQ(library_error_message(R"({"error": {"code": 403, "message": "not yours"}})"), "not yours");
  EXPECT_EQ(library_error_message(R"({"error": {"code": 400, "message": "two\nlines"}})"), "two lines");
  EXPECT_EQ(library_error_message("<html>bad gateway</html>"), "");
  EXPECT_EQ(library_error_message(R"({"error": {"message": ")" + std::string(300, 'x') + R"("}})").size(), 203u);
}

TEST(LibrarySearch, PrintsAsApptainer) {
  std::vector<FoundImage> found = {
      {"e", "c", "b", {}, "sha256.abc", "No description", {}},
      {"e", "c", "a", {"1.0", "latest"}, "sha256.def", "A thing", {"FP1", "FP2"}},
  };
  EXPECT_EQ(format_search(found, "thing", "amd64"),
            "Found 2 container images for amd64 matching \"thing\":\n\n"
            "\tlibrary://e/c/a:1.0,latest\n\t\tA thing\n\t\tSigned by: FP1,FP2\n\n"
            "\tlibrary://e/c/b:sha256.abc\n\n");
  EXPECT_EQ(format_search({}, "thing", "arm64"), "No container images found for arm64 matching \"thing\".\n\n");
}

}  // namespace
}  // namespace capsa::library
