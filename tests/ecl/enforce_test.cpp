// The decisions of an execution control list against the upstream signed fixtures (signed
// by the "Unit Test" OpenPGP key, whose public key is the administrator's keyring here).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

#include "ecl/enforce.hpp"
#include "keyring_sandbox.hpp"
#include "runtime/launch.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::ecl {
namespace {

namespace fs = std::filesystem;
using test::kUpstreamPgpFingerprint;

// Where the first data object of the upstream fixtures starts (tests/signing/verify_test.cpp).
constexpr long kFirstObjectData = 32768;
const std::string kOtherKey = "0123456789ABCDEF0123456789ABCDEF01234567";

class EclEnforce : public ::testing::Test {
 protected:
  EclEnforce() : root_(fs::canonical(dir_.path()).string()) {
    fs::create_directories(root_ + "/images");
    keyrings_ = {test::sif_fixture("keys/pgp-public.asc")};
  }

  // A copy of images/NAME in root/SUBDIR.
  std::string image(const std::string& name, const std::string& subdir = "images") const {
    fs::create_directories(root_ + "/" + subdir);
    std::string to = root_ + "/" + subdir + "/" + name;
    fs::copy_file(test::sif_fixture("images/" + name), to, fs::copy_options::overwrite_existing);
    return to;
  }

  static ExecutionControlList list_of(std::vector<ExecGroup> groups, bool legacy = false) {
    ExecutionControlList list;
    list.path = "/site/etc/capsa/ecl.toml";
    list.activated = true;
    list.legacy = legacy;
    list.groups = std::move(groups);
    return list;
  }

  ExecGroup group(Mode mode, std::vector<std::string> keys, const std::string& subdir = "images") const {
    return ExecGroup{"tag", mode, subdir.empty() ? "" : root_ + "/" + subdir, std::move(keys), 1};
  }

  // "" when `image` may run, else the refusal.
  std::string refusal(const ExecutionControlList& list, const std::string& path) const {
    try {
      enforce(list, path, keyrings_);
    } catch (const ExecutionRefused& e) {
      return e.what();
    }
    return "";
  }

  test::TempDir dir_;
  std::string root_;
  std::vector<std::string> keyrings_;
};

TEST_F(EclEnforce, WhitelistRunsWhatOneListedKeySigned) {
  auto list = list_of({group(Mode::whitelist, {kOtherKey, kUpstreamPgpFingerprint})});
  EXPECT_EQ(refusal(list, image("one-group-signed-pgp.sif")), "");
  EXPECT_EQ(refusal(list, image("two-groups-signed-pgp.sif")), "");
  const std::string unsigned_image = image("one-group.sif");
  EXPECT_EQ(refusal(list, unsigned_image),
            unsigned_image + ": refused by execgroup \"tag\" (mode whitelist, dirpath " + root_ +
                "/images) of /site/etc/capsa/ecl.toml: its signatures do not verify with the administrator's keys "
                "(global-pgp-public): no signature found for object group 1");
  auto other = list_of({group(Mode::whitelist, {kOtherKey})});
  EXPECT_NE(
      refusal(other, image("one-group-signed-pgp.sif"))
          .find(": it is not signed by any of its keys (" + kOtherKey + "; signed by " + kUpstreamPgpFingerprint + ")"),
      std::string::npos);
  // Key-pair (DSSE) signatures name no OpenPGP key.
  EXPECT_NE(refusal(list, image("one-group-signed-dsse.sif")), "");
}

TEST_F(EclEnforce, WhitestrictNeedsEveryListedKey) {
  EXPECT_EQ(refusal(list_of({group(Mode::whitestrict, {kUpstreamPgpFingerprint})}), image("two-groups-signed-pgp.sif")),
            "");
  const std::string why = refusal(list_of({group(Mode::whitestrict, {kUpstreamPgpFingerprint, kOtherKey})}),
                                  image("one-group-signed-pgp.sif"));
  EXPECT_NE(why.find("(mode whitestrict, dirpath " + root_ + "/images)"), std::string::npos) << why;
  EXPECT_NE(why.find(": it is not signed by every one of its keys (missing " + kOtherKey + ")"), std::string::npos)
      << why;
}

TEST_F(EclEnforce, BlacklistRefusesImagesSignedByAListedKeyOnly) {
  auto list = list_of({group(Mode::blacklist, {kUpstreamPgpFingerprint})});
  const std::string signed_image = image("one-group-signed-pgp.sif");
  EXPECT_EQ(refusal(list, signed_image), signed_image + ": refused by execgroup \"tag\" (mode blacklist, dirpath " +
                                             root_ +
                                             "/images) of /site/etc/capsa/ecl.toml: signature object 3 is by key " +
                                             kUpstreamPgpFingerprint + ", which it forbids");
  // Also when the key is not in the administrator's keyring.
  keyrings_.clear();
  EXPECT_NE(refusal(list, signed_image), "");
  EXPECT_EQ(refusal(list, image("one-group.sif")), "");
  EXPECT_EQ(refusal(list_of({group(Mode::blacklist, {kOtherKey})}), signed_image), "");
}

TEST_F(EclEnforce, OnlyTheAdministratorsKeysCount) {
  // The user's keyring holds the signer's key; the administrator's keyrings do not.
  test::KeyringSandbox sandbox;
  sandbox.trust_upstream_pgp_key();
  keyrings_ = {root_ + "/no-such-keyring"};
  const std::string why =
      refusal(list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint})}), image("one-group-signed-pgp.sif"));
  EXPECT_NE(why.find("object group 1 is signed only by keys that are not trusted (" +
                     std::string(kUpstreamPgpFingerprint) + ")"),
            std::string::npos)
      << why;
}

TEST_F(EclEnforce, TheImagesDirectoryChoosesItsExecgroup) {
  const std::string here = image("one-group.sif");
  const std::string elsewhere = image("one-group.sif", "elsewhere");
  const std::string below = image("one-group.sif", "images/below");
  // images/: whitelist; anywhere else: the group without dirpath (blacklist).
  auto list = list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint}), group(Mode::blacklist, {kOtherKey}, "")});
  list.groups[1].tagname = "rest";
  EXPECT_NE(refusal(list, here), "");
  EXPECT_EQ(refusal(list, elsewhere), "");
  EXPECT_EQ(refusal(list, below), "");  // dirpath is one directory, not a tree
  // A symbolic link is judged where it leads.
  fs::create_symlink(here, root_ + "/elsewhere/link.sif");
  EXPECT_NE(refusal(list, root_ + "/elsewhere/link.sif"), "");
  // No group for a directory, and none without dirpath: refused.
  auto only = list_of({group(Mode::blacklist, {kOtherKey})});
  EXPECT_EQ(refusal(only, elsewhere), elsewhere +
                                          ": refused by the execution control list /site/etc/capsa/ecl.toml: "
                                          "no execgroup has dirpath " +
                                          root_ + "/elsewhere, and none is without a dirpath");
}

TEST_F(EclEnforce, NotActivatedEverythingRuns) {
  auto list = list_of({group(Mode::whitelist, {kOtherKey})});
  list.activated = false;
  EXPECT_EQ(refusal(list, image("one-group.sif")), "");
}

TEST_F(EclEnforce, LegacyInsecureChecksTheLegacySignatureOfThePrimaryPartition) {
  const std::string legacy = image("one-group-signed-legacy.sif");
  EXPECT_NE(refusal(list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint})}), legacy), "");
  EXPECT_EQ(refusal(list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint})}, true), legacy), "");
}

TEST_F(EclEnforce, AChangedByteOfASignedImageIsRefused) {
  const std::string changed = image("one-group-signed-pgp.sif");
  ASSERT_EQ(refusal(list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint})}), changed), "");
  test::flip_byte(changed, kFirstObjectData);
  const std::string why = refusal(list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint})}), changed);
  EXPECT_NE(why.find("integrity compromised"), std::string::npos) << why;
}

TEST_F(EclEnforce, SandboxesCarryNoSignature) {
  fs::create_directories(root_ + "/images/sandbox/bin");
  const std::string sandbox = root_ + "/images/sandbox";
  EXPECT_EQ(refusal(list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint})}), sandbox),
            sandbox + ": refused by execgroup \"tag\" (mode whitelist, dirpath " + root_ +
                "/images) of /site/etc/capsa/ecl.toml: a sandbox directory carries no signature, and only SIF "
                "images signed by its keys may run");
  EXPECT_EQ(refusal(list_of({group(Mode::blacklist, {kUpstreamPgpFingerprint})}), sandbox), "");
}

// The list judges one open file and says which (device, inode, size, ctime); a run then
// mounts that very file or nothing: a file renamed over the path after the check, or one
// written to since, is refused before anything is mounted.
TEST_F(EclEnforce, ARunMountsTheVeryFileThatWasJudged) {
  auto list = list_of({group(Mode::whitelist, {kUpstreamPgpFingerprint})});
  const std::string path = image("one-group-signed-pgp.sif");
  const std::optional<FileIdentity> judged = enforce(list, path, keyrings_);
  ASSERT_TRUE(judged);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(*judged == FileIdentity::of(st));
  EXPECT_FALSE(enforce(ExecutionControlList{}, path, keyrings_)) << "no list in force: nothing to hold the run to";

  // The unsigned image renamed over the judged path.
  const std::string swapped = image("one-group.sif", "elsewhere");
  fs::rename(swapped, path);
  runtime::ActionRequest r;
  r.action = "exec";
  r.image = path;
  r.args = {"/bin/true"};
  r.image_checked = judged;
  try {
    runtime::launch(r);
    FAIL() << "launch returned";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + " changed after execution control checked it: nothing was run (run the command again)");
  }
}

}  // namespace
}  // namespace capsa::ecl
