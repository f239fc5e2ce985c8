// An execution control list in an installed prefix (PREFIX/etc/capsa/ecl.toml, with the
// administrator's keys in PREFIX/etc/capsa/global-pgp-public) against real runs, as root
// and as the test user: busybox's SIF signed by a key made for the suite runs, the same
// image unsigned is refused in one line naming the rule, for every command that starts a
// container and for an image reached through the cache (library://).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "../runtime/run_support.hpp"
#include "keyring_sandbox.hpp"
#include "site_prefix.hpp"
#include "support/background.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::ecl {
namespace {

namespace fs = std::filesystem;
using config::testing::SitePrefix;

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// What the suite shares: a key pair (in a private keyring), the images it signed or not.
struct Images {
  std::unique_ptr<test::KeyringSandbox> keys = std::make_unique<test::KeyringSandbox>();
  std::string dir;  // resolved: the dirpath of the rules
  std::string fingerprint;
  std::string signed_image, unsigned_image, sandbox;
  std::string error;  // why the set-up failed, "" when it did not
};

// Fills `images`; returns why it failed, "" when it did not.
std::string prepare(Images& images) {
  const test::TempDir& base = images.keys->dir();
  images.dir = fs::canonical(base.path()).string() + "/images";
  fs::create_directories(images.dir);
  ::chmod(base.path().c_str(), 0755);
  auto made = test::run_capsa(
      {"key", "newpair", "-N", "ECL Test", "-E", "ecl@example.org", "-b", "2048", "--password-stdin"}, "");
  if (made.exit_code != 0) return "key newpair: " + made.err;
  auto listed = test::run_capsa({"key", "list"});
  const auto at = listed.out.find("Fingerprint:       ");
  if (at == std::string::npos) return "key list: " + listed.out;
  images.fingerprint = listed.out.substr(at + 19, 40);
  images.signed_image = images.dir + "/signed.sif";
  images.unsigned_image = images.dir + "/unsigned.sif";
  fs::copy_file(runtime::testing::busybox_sif(), images.signed_image);
  fs::copy_file(runtime::testing::busybox_sif(), images.unsigned_image);
  auto signed_ = test::run_capsa({"sign", images.signed_image});
  if (signed_.exit_code != 0) return "sign: " + signed_.err;
  const std::string prefix_keys = SitePrefix::get().path() + "/etc/capsa/global-pgp-public";
  auto exported = test::run_capsa({"key", "export", prefix_keys});
  if (exported.exit_code != 0) return "key export: " + exported.err;
  ::chmod(prefix_keys.c_str(), 0644);
  test::TempDir scratch;
  const std::string built = runtime::testing::make_busybox_sandbox(scratch);
  images.sandbox = images.dir + "/sandbox";
  fs::copy(built, images.sandbox, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  return "";
}

class EclRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    images_ = new Images;
    images_->error = prepare(*images_);
  }
  static void TearDownTestSuite() {
    delete images_;
    images_ = nullptr;
  }

  void SetUp() override { ASSERT_EQ(images_->error, "") << "set-up"; }
  void TearDown() override {
    std::error_code ignored;
    fs::remove(ecl_path(), ignored);
  }

  static std::string ecl_path() { return SitePrefix::get().path() + "/etc/capsa/ecl.toml"; }

  static void write_ecl(const std::string& text, mode_t mode = 0644) {
    std::ofstream(ecl_path(), std::ios::trunc) << text;
    ::chmod(ecl_path().c_str(), mode);
  }

  static std::string rule(const std::string& mode, const std::string& dirpath, const std::string& key) {
    return "[[execgroup]]\ntagname = \"site\"\nmode = \"" + mode + "\"\n" +
           (dirpath.empty() ? "" : "dirpath = \"" + dirpath + "\"\n") + "keyfp = [\"" + key + "\"]\n";
  }

  static test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return SitePrefix::get().capsa(args, env);
  }

  // Refused: exit 1, nothing on standard output, one line naming the rule and the file.
  static void expect_refused(const test::ProcessResult& r, const std::string& mode) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(
        r.err.find("refused by execgroup \"site\" (mode " + mode + ", dirpath " + images_->dir + ") of " + ecl_path()),
        std::string::npos)
        << r.err;
  }

  static Images* images_;
};

Images* EclRun::images_ = nullptr;

TEST_F(EclRun, AWhitelistRunsTheSignedImageAndRefusesTheUnsignedOneForEveryCommand) {
  write_ecl("activated = true\n" + rule("whitelist", images_->dir, images_->fingerprint));
  auto ran = capsa({"exec", images_->signed_image, "echo", "signed ran"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "signed ran\n");
  for (const std::string action : {"exec", "run", "shell", "test"}) {
    std::vector<std::string> args = {action, images_->unsigned_image};
    if (action == "exec") args.insert(args.end(), {"echo", "unsigned ran"});
    auto refused = capsa(args);
    SCOPED_TRACE(action);
    expect_refused(refused, "whitelist");
    EXPECT_NE(refused.err.find(images_->unsigned_image + ": refused"), std::string::npos) << refused.err;
  }
  auto started = capsa({"instance", "start", images_->unsigned_image, "ecl-refused"});
  expect_refused(started, "whitelist");
  auto list = capsa({"instance", "list"});
  EXPECT_EQ(list.out.find("ecl-refused"), std::string::npos) << list.out;
  capsa({"instance", "stop", "ecl-refused"});
  // The sandbox in the same directory carries no signature.
  auto sandbox = capsa({"exec", images_->sandbox, "true"});
  expect_refused(sandbox, "whitelist");
  EXPECT_NE(sandbox.err.find("a sandbox directory carries no signature"), std::string::npos) << sandbox.err;
  // Neither a configuration file of the user's nor the environment loosens it.
  test::TempDir dir;
  const std::string conf = dir.write("capsa.conf", "allow container dir = yes\n");
  expect_refused(capsa({"-c", conf, "exec", images_->unsigned_image, "true"}, {"APPTAINER_CONFIGDIR=" + dir.path()}),
                 "whitelist");
}

TEST_F(EclRun, ABlacklistRefusesOnlyTheListedSignersImages) {
  write_ecl("activated = true\n" + rule("blacklist", images_->dir, images_->fingerprint));
  auto refused = capsa({"exec", images_->signed_image, "true"});
  expect_refused(refused, "blacklist");
  EXPECT_NE(refused.err.find("is by key " + images_->fingerprint + ", which it forbids"), std::string::npos)
      << refused.err;
  auto ran = capsa({"exec", images_->unsigned_image, "echo", "ran"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\n");
}

TEST_F(EclRun, NotActivatedOrNoExecgroupForTheDirectory) {
  write_ecl("activated = false\n" + rule("whitelist", images_->dir, images_->fingerprint));
  auto ran = capsa({"exec", images_->unsigned_image, "echo", "ran"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\n");
  // The only execgroup is for another directory: an image here is in none.
  test::TempDir other;
  write_ecl("activated = true\n" + rule("blacklist", fs::canonical(other.path()).string(), images_->fingerprint));
  auto refused = capsa({"exec", images_->unsigned_image, "true"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(lines(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find("no execgroup has dirpath " + images_->dir), std::string::npos) << refused.err;
}

TEST_F(EclRun, AMalformedOrUnsafeListStopsEveryRunNamingTheFile) {
  write_ecl("activated = true\n[[execgroup]\n");
  auto malformed = capsa({"exec", images_->signed_image, "true"});
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_EQ(malformed.out, "");
  EXPECT_EQ(lines(malformed.err), 1) << malformed.err;
  EXPECT_NE(malformed.err.find(ecl_path() + ":2: "), std::string::npos) << malformed.err;
  write_ecl("activated = true\n" + rule("blacklist", images_->dir, images_->fingerprint), 0666);
  auto writable = capsa({"exec", images_->unsigned_image, "true"});
  EXPECT_EQ(writable.exit_code, 1);
  EXPECT_EQ(lines(writable.err), 1) << writable.err;
  EXPECT_NE(writable.err.find("chmod go-w " + ecl_path()), std::string::npos) << writable.err;
  if (::geteuid() == 0) {
    write_ecl("activated = false\n");
    ASSERT_EQ(::chown(ecl_path().c_str(), 65534, 65534), 0);
    auto foreign = capsa({"exec", images_->unsigned_image, "true"});
    EXPECT_EQ(foreign.exit_code, 1);
    EXPECT_NE(foreign.err.find("must be owned by root: chown root " + ecl_path()), std::string::npos) << foreign.err;
  }
}

TEST_F(EclRun, AnImageReachedThroughTheCacheIsChecked) {
  test::TempDir work;
  ::chmod(work.path().c_str(), 0755);
  work.write("catalog.json",
             R"([{"path": "capsa/ecl/box:signed", "file": ")" + images_->signed_image +
                 R"(", "mode": "normal", "arch": "amd64"}, {"path": "capsa/ecl/box:unsigned", "file": ")" +
                 images_->unsigned_image + R"(", "mode": "normal", "arch": "amd64"}])");
  test::Background server(
      {std::string(CAPSA_SOURCE_DIR) + "/tests/library/library_server.py", work / "catalog.json", work / "ports"},
      work / "server.err");
  ASSERT_TRUE(test::eventually([&] { return fs::exists(work / "ports"); }, 30)) << test::read_file(work / "server.err");
  int port = 0;
  std::ifstream(work / "ports") >> port;
  const std::vector<std::string> env = {"CAPSA_CACHEDIR=" + (work / "cache"),
                                        "APPTAINER_LIBRARY=http://127.0.0.1:" + std::to_string(port)};
  // Images in the cache are in no dirpath: the execgroup without one decides.
  write_ecl("activated = true\n" + rule("whitelist", "", images_->fingerprint));
  auto ran = capsa({"exec", "library://capsa/ecl/box:signed", "echo", "ran"}, env);
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_NE(ran.out.find("ran\n"), std::string::npos) << ran.out;
  auto refused = capsa({"-q", "exec", "library://capsa/ecl/box:unsigned", "echo", "ran"}, env);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find((work / "cache") + "/"), std::string::npos) << "names the cached SIF: " << refused.err;
  EXPECT_NE(refused.err.find("refused by execgroup \"site\" (mode whitelist, no dirpath)"), std::string::npos)
      << refused.err;
}

}  // namespace
}  // namespace capsa::ecl
