// Squatting: a directory capsa uses at a predictable name in /tmp, made first by another
// user, must not block a user's containers (runtime/session_mount_point.hpp).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "people.hpp"

namespace capsa::adversarial {
namespace {

// Finding: the attacker made /tmp/.capsa-session-UID of the victim's uid first, and every
// container of the victim failed.
TEST(Squatting, AnotherUsersSessionDirectoryBlocksNoContainer) {
  const std::string usual = "/tmp/.capsa-session-" + std::to_string(victim().uid);
  const std::string fallbacks = usual + ".??????";
  shell_as(victim(), "rmdir " + fallbacks + " 2>/dev/null");
  // The victim's own (an empty mount point) goes, so that the attacker can take the name.
  if (::rmdir(usual.c_str()) != 0) {
    ASSERT_EQ(errno, ENOENT) << "cannot remove " << usual;
  }
  ASSERT_EQ(shell_as(attacker(), "mkdir -m 0700 '" + usual + "'").exit_code, 0);
  struct stat st {};
  ASSERT_EQ(::lstat(usual.c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, attacker().uid) << "the attacker holds the name";

  const OwnedDir dir(victim());
  const std::string image = image_owned_by(victim(), dir, "busybox.sif");
  const auto run = capsa_as(victim(), {"exec", image, "true"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto again = capsa_as(victim(), {"exec", image, "true"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  // One directory of the victim's serves every later container: none piles up per start.
  EXPECT_EQ(shell_as(victim(), "ls -d " + fallbacks + " | wc -l").out, "1\n");

  // The squatter's directory and the victim's fallback go with the test.
  ::rmdir(usual.c_str());
  shell_as(victim(), "rmdir " + fallbacks + " 2>/dev/null");
}

}  // namespace
}  // namespace capsa::adversarial
