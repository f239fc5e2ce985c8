// The release tarball (scripts/package-tarball.sh, packed by the portable.tarball.pack test):
// unpacked by the unprivileged user in a directory of their own, it runs from another
// working directory and through a symlink, without the build or source tree; and its
// binaries need nothing above glibc 2.28 (scripts/check-glibc-floor.sh). Root and test user:
// the root variant also hides the source and build trees (a tmpfs over them, in a mount
// namespace of each command) and runs every command as the test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"
#include "support/unprivileged.hpp"

namespace capsa::portable {
namespace {

namespace fs = std::filesystem;
using test::run_process;

std::string the_tarball() {
  for (const auto& entry : fs::directory_iterator(CAPSA_TEST_TARBALL_DIR)) {
    const std::string name = entry.path().filename();
    if (name.starts_with("capsa-") && name.ends_with("-x86_64.tar.gz")) return entry.path();
  }
  return "";
}

std::string floor_check() { return std::string(CAPSA_SOURCE_DIR) + "/scripts/check-glibc-floor.sh"; }

class Tarball : public ::testing::Test {
 protected:
  void SetUp() override {
    tarball_ = the_tarball();
    ASSERT_FALSE(tarball_.empty()) << "no capsa-*-x86_64.tar.gz in " << CAPSA_TEST_TARBALL_DIR
                                   << " (the portable.tarball.pack test makes it)";
    if (::geteuid() == 0) {
      auto user = test::test_user();
      if (!user) GTEST_SKIP() << "the test user does not exist (scripts/create-test-user.sh)";
      user_ = *user;
      // The test user owns the unpacked tree, as a user unpacking it into their home does.
      ASSERT_EQ(::chown(work_.path().c_str(), user_.uid, user_.gid), 0);
    }
    // The tarball and the image, copied where the test user reads them.
    fs::copy_file(tarball_, work_ / "capsa.tar.gz");
    name_ = fs::path(tarball_).filename();
    name_.resize(name_.size() - std::string(".tar.gz").size());
    tarball_ = work_ / "capsa.tar.gz";
    sif_ = work_ / "busybox.sif";
    fs::copy_file(test::sif_fixture("real/busybox_amd64.sif"), sif_);
    for (const std::string& copy : {tarball_, sif_})
      fs::permissions(copy, fs::perms::others_read, fs::perm_options::add);
  }

  // argv as the unprivileged user; as root, also in a mount namespace where the source
  // and build trees are empty (the build first: it may lie inside the source tree).
  test::ProcessResult as_user(const std::vector<std::string>& argv) {
    if (::geteuid() != 0) return run_process(argv, "", 300);
    // $1, $2: the trees to hide; $3, $4: the user and their home; then the command.
    static const std::string hide_then_drop =
        "mount -t tmpfs capsa-hidden \"$1\" && mount -t tmpfs capsa-hidden \"$2\" || exit 125; "
        "user=\"$3\" home=\"$4\"; shift 4; "
        "exec setpriv --reuid=\"$user\" --regid=\"$user\" --init-groups --inh-caps=-all "
        "env -i PATH=/usr/bin:/bin HOME=\"$home\" USER=\"$user\" \"$@\"";
    std::vector<std::string> wrapped = {
        "unshare",        "--mount",  "sh",      "-c", hide_then_drop, "sh", CAPSA_TEST_BUILD_DIR,
        CAPSA_SOURCE_DIR, user_.name, user_.home};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return run_process(wrapped, "", 300);
  }

  test::TempDir work_;
  std::string tarball_;
  std::string name_;  // capsa-VERSION-x86_64, the tarball's top folder
  std::string sif_;
  test::TestUser user_{};
};

TEST_F(Tarball, UnpackedAnywhereRunsWithoutTheBuildTree) {
  auto unpacked = as_user({"tar", "-xzf", tarball_, "-C", work_.path()});
  ASSERT_EQ(unpacked.exit_code, 0) << unpacked.err;
  const std::string tree = work_ / name_;

  if (::geteuid() == 0) {  // the commands below see no source or build tree
    auto hidden = as_user({"ls", "-A", CAPSA_SOURCE_DIR});
    EXPECT_EQ(hidden.exit_code, 0) << hidden.err;
    EXPECT_EQ(hidden.out, "") << "the source tree is still visible";
  }

  // The layout the README promises.
  for (const char* piece :
       {"bin/capsa", "libexec/capsa/capsa-full", "etc/capsa/capsa.conf", "etc/capsa/nvliblist.conf",
        "etc/capsa/rocmliblist.conf", "share/man/man1/capsa.1", "share/bash-completion/completions/singularity",
        "share/zsh/site-functions/_capsa", "share/modulefiles/singularity"})
    EXPECT_TRUE(fs::exists(tree + "/" + piece)) << piece;
  for (const char* alias : {"singularity", "apptainer", "run-singularity"}) {
    EXPECT_TRUE(fs::is_symlink(tree + "/bin/" + alias)) << alias;
    EXPECT_EQ(fs::read_symlink(tree + "/bin/" + alias), "capsa") << alias << " must be a relative link";
  }

  // A symlink elsewhere (as a user's ~/bin/singularity), used from yet another directory.
  ASSERT_EQ(as_user({"mkdir", work_ / "links", work_ / "elsewhere"}).exit_code, 0);
  ASSERT_EQ(as_user({"ln", "-s", tree + "/bin/singularity", work_ / "links/singularity"}).exit_code, 0);
  const std::string in_elsewhere = "cd \"$0\" && exec \"$@\"";

  auto version = as_user({"sh", "-c", in_elsewhere, work_ / "elsewhere", tree + "/bin/capsa", "--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find(CAPSA_TEST_VERSION), std::string::npos) << version.out;

  auto ran = as_user({"sh", "-c", in_elsewhere, work_ / "elsewhere", work_ / "links/singularity", "exec", sif_, "echo",
                      "from the tarball"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "from the tarball\n");

  // `inspect` is capsa-full's: the runner hands it to the tarball's libexec/capsa copy.
  auto inspected =
      as_user({"sh", "-c", in_elsewhere, work_ / "elsewhere", work_ / "links/singularity", "inspect", "--json", sif_});
  EXPECT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("\"attributes\""), std::string::npos) << inspected.out;

  // HTTPS through the static libcurl and OpenSSL: an anonymous pull from the TLS registry,
  // trusting its CA as a site with a private registry does, then a run of what it pulled.
  const std::string ca = work_ / "registry-ca.pem";
  fs::copy_file(test::test_registry().ca_file, ca);
  fs::permissions(ca, fs::perms::others_read, fs::perm_options::add);
  auto pulled =
      as_user({"env", "CAPSA_CACHEDIR=" + (work_ / "cache"), "CAPSA_REGISTRY_CA=" + ca, tree + "/bin/capsa", "pull",
               work_ / "pulled.sif", "docker://" + test::test_registry().token + "/public/busybox:1.0"});
  EXPECT_EQ(pulled.exit_code, 0) << pulled.err;
  auto pulled_ran = as_user({tree + "/bin/apptainer", "exec", work_ / "pulled.sif", "echo", "pulled over https"});
  EXPECT_EQ(pulled_ran.out, "pulled over https\n") << pulled_ran.err;

  auto floor = run_process({floor_check(), tree + "/bin/capsa", tree + "/libexec/capsa/capsa-full"});
  EXPECT_EQ(floor.exit_code, 0) << floor.out << floor.err;
}

// The check the tarball relies on finds what it must: the build's ordinary capsa-full links
// Debian's shared libraries and glibc 2.34's symbols.
TEST(GlibcFloorCheck, NamesEachNewerSymbolAndEachForeignLibrary) {
  const char* build = std::getenv("CAPSA_BUILD_DIR");
  ASSERT_NE(build, nullptr) << "CAPSA_BUILD_DIR is not set; run through ctest";
  auto checked = run_process({floor_check(), std::string(build) + "/src/cli/capsa-full"});
  EXPECT_EQ(checked.exit_code, 1) << checked.out << checked.err;
  EXPECT_NE(checked.out.find("needs libcurl.so.4"), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find(" __libc_start_main GLIBC_2.34"), std::string::npos) << checked.out;
  EXPECT_NE(checked.err.find("need more than glibc 2.28"), std::string::npos) << checked.err;

  auto portable = run_process({floor_check(), std::string(build) + "/src/cli/capsa-portable",
                               std::string(build) + "/src/cli/capsa-full-portable"});
  EXPECT_EQ(portable.exit_code, 0) << portable.out << portable.err;
  EXPECT_EQ(portable.out, "");
}

}  // namespace
}  // namespace capsa::portable
