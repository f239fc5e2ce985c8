// library:// references as Apptainer's and SingularityCE's pull take them.
#include "library/reference.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa::library {
namespace {

TEST(LibraryReference, ShortFormsGetTheLibrarysDefaults) {
  auto one = parse_library_reference("library://alpine:3.11");
  EXPECT_EQ(one.api_path(), "library/default/alpine:3.11");
  EXPECT_EQ(one.default_sif_name(), "alpine_3.11.sif");
  EXPECT_EQ(one.host, "");

  auto two = parse_library_reference("library://funny/lolcow");
  EXPECT_EQ(two.api_path(), "library/funny/lolcow:latest");
  EXPECT_EQ(two.default_sif_name(), "lolcow_latest.sif");

  auto three = parse_library_reference("library://godlovedc/funny/lolcow");
  EXPECT_EQ(three.api_path(), "godlovedc/funny/lolcow:latest");
  EXPECT_EQ(parse_library_reference("library:///godlovedc/funny/lolcow").api_path(), three.api_path());
}

TEST(LibraryReference, AFourthComponentInFrontIsTheHost) {
  auto ref = parse_library_reference("library://library.example.org:8443/sylabs/examples/lolcow:1.0");
  EXPECT_EQ(ref.host, "library.example.org:8443");
  EXPECT_EQ(ref.api_path(), "sylabs/examples/lolcow:1.0");
}

TEST(LibraryReference, ADigestBecomesTheLibrarysHashTag) {
  const std::string hex(64, 'a');
  auto ref = parse_library_reference("library://e/c/box@sha256:" + hex);
  EXPECT_EQ(ref.tag, "sha256." + hex);
  ASSERT_TRUE(ref.digest.has_value());
  EXPECT_EQ(*ref.digest, "sha256:" + hex);
  EXPECT_EQ(ref.api_path(), "e/c/box:sha256." + hex);
}

TEST(LibraryReference, BadReferencesAreRefusedWithTheReason) {
  for (const char* bad : {"docker://alpine", "library://", "library://a/b/c/d/e", "library://Alpine",
                          "library://a//b", "library://alpine:", "library://alpine:bad tag",
                          "library://e/c/box@sha256:abc", "library://e/c/box:1.0@sha256:" })
    EXPECT_THROW(parse_library_reference(bad), FormatError) << bad;
  try {
    parse_library_reference("library://a/b/c/d/e");
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("library://a/b/c/d/e"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(is_library_reference("library://x"));
  EXPECT_FALSE(is_library_reference("docker://x"));
}

}  // namespace
}  // namespace capsa::library
