// Finding 8 of the hardening audit: the site's `limit container paths` (and owners,
// groups, allow container ...) were checked on a path that capsa opened again later, so an
// unprivileged user who flipped a symlink between an allowed and a forbidden image in a
// loop ran the forbidden one in about half of the starts. Now the checks read one open
// file and the launch runs that file or nothing (runtime/site_policy.hpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "../runtime/run_support.hpp"
#include "people.hpp"
#include "support/background.hpp"
#include "support/temp_dir.hpp"

namespace capsa::adversarial {
namespace {

// A shell loop of the attacker's that keeps pointing `link` at one image, then the other
// (its own process group: the end of the scope kills the loop and its `ln`s).
test::Background flipping(const std::string& link, const std::string& a, const std::string& b) {
  const std::string script = "while :; do ln -sfn '" + a + "' '" + link + "'; ln -sfn '" + b + "' '" + link + "'; done";
  return test::Background(argv_as(attacker(), {"sh", "-c", script}), "/dev/null", true);
}

// The attacker's folder, which they own and may change, with an image that says `word`.
std::string image_saying(const test::TempDir& dir, const std::string& name, const std::string& word) {
  std::string sif = runtime::testing::make_image(dir, name, {{"/marker", word + "\n"}});
  ::chown(sif.c_str(), attacker().uid, attacker().gid);
  return sif;
}

TEST(ImageSwap, ASymlinkFlippedToAForbiddenImageNeverRunsIt) {
  test::TempDir allowed_dir, forbidden_dir;
  for (const test::TempDir* dir : {&allowed_dir, &forbidden_dir}) {
    ::chmod(dir->path().c_str(), 0755);
    ASSERT_EQ(::chown(dir->path().c_str(), attacker().uid, attacker().gid), 0);
  }
  const std::string allowed = image_saying(allowed_dir, "allowed", "allowed");
  const std::string forbidden = image_saying(forbidden_dir, "forbidden", "forbidden");
  write_site_conf("limit container paths = " + allowed_dir.path() + "\n");
  const std::string link = allowed_dir / "link.sif";
  ASSERT_EQ(::symlink(allowed.c_str(), link.c_str()), 0);
  ::lchown(link.c_str(), attacker().uid, attacker().gid);

  // The step works outside the race: the forbidden image is refused, the allowed one runs.
  auto refused = capsa_as(attacker(), {"exec", forbidden, "cat", "/marker"});
  ASSERT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("limit container paths"), std::string::npos) << refused.err;
  auto ran = capsa_as(attacker(), {"exec", link, "cat", "/marker"});
  ASSERT_EQ(ran.out, "allowed\n") << ran.err;

  int allowed_runs = 0, forbidden_runs = 0;
  {
    const test::Background flipper = flipping(link, allowed, forbidden);
    for (int i = 0; i < 40; ++i) {
      auto r = capsa_as(attacker(), {"exec", link, "cat", "/marker"});
      if (r.out == "allowed\n") ++allowed_runs;
      if (r.out.find("forbidden") != std::string::npos) ++forbidden_runs;
    }
  }
  EXPECT_EQ(forbidden_runs, 0) << "the forbidden image ran " << forbidden_runs << " times in 40";
  EXPECT_GT(allowed_runs, 0) << "the race was never won by the allowed image: the test proved nothing";
  write_site_conf("");
}

}  // namespace
}  // namespace capsa::adversarial
