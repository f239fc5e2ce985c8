// Digests: the grammar registries use, and hashes that agree with sha256sum.
#include "oci/digest.hpp"

#include <gtest/gtest.h>

#include "support/process.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

const std::string kEmptySha256 = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(Digest, ParsesSha256AndSha512) {
  Digest d = Digest::parse(kEmptySha256);
  EXPECT_EQ(d.algorithm(), "sha256");
  EXPECT_EQ(d.hex(), kEmptySha256.substr(7));
  EXPECT_EQ(d.to_string(), kEmptySha256);
  std::string sha512 = "sha512:" + std::string(128, 'a');
  EXPECT_EQ(Digest::parse(sha512).to_string(), sha512);
}

struct BadDigest {
  std::string text;
  std::string why;
};
void PrintTo(const BadDigest& c, std::ostream* os) { *os << c.text; }

class DigestGrammar : public testing::TestWithParam<BadDigest> {};

TEST_P(DigestGrammar, IsRefusedSayingWhy) {
  try {
    Digest::parse(GetParam().text);
    FAIL() << "accepted " << GetParam().text;
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()), "invalid digest \"" + GetParam().text + "\": " + GetParam().why);
  }
}

const std::string kGrammar = "expected algorithm:hex, e.g. sha256:<64 hex digits>";
INSTANTIATE_TEST_SUITE_P(
    All, DigestGrammar,
    testing::Values(BadDigest{"", kGrammar}, BadDigest{"sha256", kGrammar}, BadDigest{"sha256:", kGrammar},
                    BadDigest{":" + std::string(64, 'a'), kGrammar},
                    BadDigest{"SHA256:" + std::string(64, 'a'), kGrammar},
                    BadDigest{"sha256:" + std::string(63, 'a') + "!", kGrammar},
                    BadDigest{"sha256+:" + std::string(64, 'a'), kGrammar},
                    BadDigest{"sha256:" + std::string(63, 'a'), "sha256 needs 64 lower-case hex digits"},
                    BadDigest{"sha256:" + std::string(65, 'a'), "sha256 needs 64 lower-case hex digits"},
                    BadDigest{"sha256:" + std::string(64, 'g'), "sha256 needs 64 lower-case hex digits"},
                    BadDigest{"sha256:" + std::string(64, 'A'), "sha256 needs 64 lower-case hex digits"},
                    BadDigest{"sha512:" + std::string(64, 'a'), "sha512 needs 128 lower-case hex digits"},
                    BadDigest{"md5:d41d8cd98f00b204e9800998ecf8427e",
                              "unsupported algorithm \"md5\" (capsa accepts sha256 and sha512)"},
                    BadDigest{"blake3:" + std::string(64, 'a'),
                              "unsupported algorithm \"blake3\" (capsa accepts sha256 and sha512)"},
                    BadDigest{"sha256+b64u:LCa0a2j_xo_5m0U8HTBBNBNCLXBkg7-g-YpeiGJm564",
                              "unsupported algorithm \"sha256+b64u\" (capsa accepts sha256 and sha512)"}));

TEST(Digest, ComputedDigestsAgreeWithCoreutils) {
  const std::string bytes = "{\n  \"schemaVersion\": 2\n}\n";
  for (const char* algorithm : {"sha256", "sha512"}) {
    auto tool = test::run_process({std::string(algorithm) + "sum"}, bytes);
    ASSERT_EQ(tool.exit_code, 0);
    Digest d = Digest::compute(algorithm, bytes);
    EXPECT_EQ(d.hex(), tool.out.substr(0, tool.out.find(' ')));
    EXPECT_TRUE(d.matches(bytes));
    EXPECT_FALSE(d.matches(bytes + " "));
  }
  EXPECT_EQ(Digest::sha256_of("").to_string(), kEmptySha256);
}

TEST(Digest, HasherFedInPiecesAgreesWithCoreutils) {
  std::string blob;
  for (int i = 0; i < 100000; ++i) blob += static_cast<char>(i * 7 + i / 256);
  auto tool = test::run_process({"sha256sum"}, blob);
  ASSERT_EQ(tool.exit_code, 0);
  Hasher hasher;
  for (std::size_t at = 0; at < blob.size(); at += 4093) hasher.update(std::string_view(blob).substr(at, 4093));
  EXPECT_EQ(hasher.finish().hex(), tool.out.substr(0, 64));
  // finish() starts again from nothing.
  EXPECT_EQ(hasher.finish().to_string(), kEmptySha256);
  EXPECT_THROW(Hasher("md5"), Error);
}

TEST(Digest, ComparesByValue) {
  EXPECT_EQ(Digest::parse(kEmptySha256), Digest::sha256_of(""));
  EXPECT_NE(Digest::sha256_of("a"), Digest::sha256_of("b"));
}

}  // namespace
}  // namespace capsa::oci
