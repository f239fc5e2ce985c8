// The machine-readable index (draft-shaw-openpgp-hkp §5.2) and `key search`'s columns.
#include "keyserver/index_format.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa::keyserver {
namespace {

const char* const kTwoKeys =
    "info:1:2\n"
    "pub:84C5E5563C61FB21BC043A3D779C7D0861406224:1:2048:1795696912::\n"
    "uid:Push Test <push@example.org>:1795696912::\n"
    "uid:Push%20Test%20%28work%29 <push@work.example.org>:1795696912::\n"
    "pub:0123456789ABCDEF0123456789ABCDEF01234567:22:256:1600000000:1700000000:r\n";

TEST(IndexFormat, ParsesKeysUserIdsAndTheirEscapes) {
  const KeyIndex index = parse_index(kTwoKeys);
  ASSERT_EQ(index.count, 2);
  ASSERT_EQ(index.keys.size(), 2u);
  EXPECT_EQ(index.keys[0].key_id, "84C5E5563C61FB21BC043A3D779C7D0861406224");
  EXPECT_EQ(index.keys[0].bits, "2048");
  ASSERT_EQ(index.keys[0].user_ids.size(), 2u);
  EXPECT_EQ(index.keys[0].user_ids[1], "Push Test (work) <push@work.example.org>");
  EXPECT_EQ(index.keys[1].flags, "r");
  EXPECT_TRUE(index.keys[1].user_ids.empty());
}

TEST(IndexFormat, ShortListIsApptainersColumns) {
  EXPECT_EQ(format_index(parse_index(kTwoKeys), false),
            "Showing 2 results\n\n"
            "KEY ID    BITS  NAME/EMAIL\n"
            "61406224  2048  Push Test <push@example.org>\n"
            "                Push Test (work) <push@work.example.org>\n"
            "\n"
            "01234567  256  \n");
}

TEST(IndexFormat, LongListShowsFingerprintAlgorithmAndStatus) {
  const std::string out = format_index(parse_index(kTwoKeys), true);
  EXPECT_NE(out.find("FINGERPRINT                               ALGORITHM  BITS  CREATION DATE"), std::string::npos)
      << out;
  EXPECT_NE(out.find("84C5E5563C61FB21BC043A3D779C7D0861406224  RSA        2048  "), std::string::npos) << out;
  EXPECT_NE(out.find("[enabled]"), std::string::npos) << out;
  EXPECT_NE(out.find("0123456789ABCDEF0123456789ABCDEF01234567  unknown"), std::string::npos) << out;
  EXPECT_NE(out.find("[revoked]"), std::string::npos) << out;
}

TEST(IndexFormat, MalformedIndexesAreRefused) {
  EXPECT_THROW(parse_index("info:1:3\npub:ABCDEF01:1:2048:1::\n"), FormatError);  // count differs
  EXPECT_THROW(parse_index("uid:nobody:1::\n"), FormatError);                     // uid before pub
  EXPECT_THROW(parse_index("<html><body>No results</body></html>\n"), FormatError);
  EXPECT_THROW(parse_index("info:x:y\n"), FormatError);
  EXPECT_EQ(parse_index("info:1:0\n").keys.size(), 0u);
}

}  // namespace
}  // namespace capsa::keyserver
