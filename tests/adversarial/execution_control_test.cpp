// Finding 9 of the hardening audit (last item): execution control checked an image's
// signatures, but the container reads the image as it runs, so a user who can write the
// image could change it after the check and run bytes no administrator's key signed. Now
// the run holds a read lease on the image it checked (runtime/image_lease.hpp): opening
// the image for writing stops the container before the open returns.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../config/site_prefix.hpp"
#include "../runtime/run_support.hpp"
#include "keyring_sandbox.hpp"
#include "people.hpp"
#include "support/background.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::adversarial {
namespace {

namespace fs = std::filesystem;

// A key pair of the administrator's (its public key in PREFIX/etc/capsa/global-pgp-public)
// and busybox signed with it, as a file of the attacker's in a folder of theirs.
struct SignedImage {
  test::KeyringSandbox keys;
  OwnedDir dir{attacker()};
  std::string image = dir / "signed.sif";
  std::string error;

  SignedImage() {
    auto made = test::run_capsa(
        {"key", "newpair", "-N", "ECL Test", "-E", "ecl@example.org", "-b", "2048", "--password-stdin"}, "");
    if (made.exit_code != 0) error = "key newpair: " + made.err;
    fs::copy_file(runtime::testing::busybox_sif(), image);
    auto signed_image = test::run_capsa({"sign", image});
    if (error.empty() && signed_image.exit_code != 0) error = "sign: " + signed_image.err;
    const std::string keys_file = config::testing::SitePrefix::get().path() + "/etc/capsa/global-pgp-public";
    auto exported = test::run_capsa({"key", "export", keys_file});
    if (error.empty() && exported.exit_code != 0) error = "key export: " + exported.err;
    ::chmod(keys_file.c_str(), 0644);
    ::chown(image.c_str(), attacker().uid, attacker().gid);
    ::chmod(image.c_str(), 0644);
  }
  std::string fingerprint() const {
    auto listed = test::run_capsa({"key", "list"});
    const auto at = listed.out.find("Fingerprint:       ");
    return at == std::string::npos ? "" : listed.out.substr(at + 19, 40);
  }
};

class Ecl {
 public:
  explicit Ecl(const std::string& fingerprint) {
    std::ofstream(path(), std::ios::trunc) << "activated = true\n[[execgroup]]\ntagname = \"site\"\n"
                                           << "mode = \"whitelist\"\nkeyfp = [\"" << fingerprint << "\"]\n";
    ::chmod(path().c_str(), 0644);
  }
  ~Ecl() {
    std::error_code ignored;
    fs::remove(path(), ignored);
  }
  Ecl(const Ecl&) = delete;
  Ecl& operator=(const Ecl&) = delete;

 private:
  static std::string path() { return config::testing::SitePrefix::get().path() + "/etc/capsa/ecl.toml"; }
};

TEST(ExecutionControl, OpeningTheCheckedImageForWritingStopsTheContainerFirst) {
  write_site_conf("");
  SignedImage signed_image;
  ASSERT_EQ(signed_image.error, "");
  const Ecl ecl(signed_image.fingerprint());
  const std::string ready = signed_image.dir / "ready";

  // The image runs, and the attacker may write it outside capsa.
  auto ran = capsa_as(attacker(), {"exec", signed_image.image, "echo", "signed ran"});
  ASSERT_EQ(ran.out, "signed ran\n") << ran.err;
  ASSERT_EQ(shell_as(attacker(), ": >> '" + signed_image.image + "'").exit_code, 0);

  const std::string err = signed_image.dir / "container.err";
  test::Background container(
      argv_as(attacker(), {site_capsa(), "exec", signed_image.image, "sh", "-c",
                           "touch '" + ready + "'; sleep 8; echo survived"}),
      err, false, signed_image.dir / "container.out");
  ASSERT_TRUE(test::eventually([&] { return fs::exists(ready); }, 30)) << test::read_file(err);
  // The attacker opens the image for writing while the container runs: the open waits
  // until the container has been stopped.
  auto opened = shell_as(attacker(), ": >> '" + signed_image.image + "'; echo opened", 60);
  EXPECT_EQ(opened.out, "opened\n") << opened.err;
  const bool ended = test::eventually([&] { return container.finished(); }, 1);
  EXPECT_TRUE(ended) << "the container still runs after its image was opened for writing";
  const test::ProcessResult result = container.wait();
  EXPECT_EQ(result.out.find("survived"), std::string::npos) << "the container went on: " << result.out;
}

TEST(ExecutionControl, AnImageOpenForWritingIsNotRun) {
  write_site_conf("");
  SignedImage signed_image;
  ASSERT_EQ(signed_image.error, "");
  const Ecl ecl(signed_image.fingerprint());
  // The attacker keeps the image open for writing, to write it once the check has passed.
  const std::string ready = signed_image.dir / "ready";
  test::Background writer(
      argv_as(attacker(), {"sh", "-c", "exec 3>>'" + signed_image.image + "'; touch '" + ready + "'; sleep 30"}),
      "/dev/null", true);
  ASSERT_TRUE(test::eventually([&] { return fs::exists(ready); }, 10));
  auto r = capsa_as(attacker(), {"exec", signed_image.image, "echo", "ran"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("is open for writing"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace capsa::adversarial
