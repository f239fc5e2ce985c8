// A cache root made by someone else (cache/cache.cpp): its owner can replace any entry in
// it, so only the caller's own and root's shared caches are used (docs/cache.md).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "people.hpp"

namespace capsa::adversarial {
namespace {

// The cache root at DIR/cache, `owner`'s, group `group`, setgid and group-writable: the
// shape of a deliberately shared cache.
std::string shared_cache_root(const OwnedDir& dir, uid_t owner, gid_t group) {
  std::string root = dir / "cache";
  if (::mkdir(root.c_str(), 0775) != 0 || ::chown(root.c_str(), owner, group) != 0 || ::chmod(root.c_str(), 02775) != 0)
    throw std::runtime_error("cannot make " + root);
  return root;
}

// Finding: the attacker made the directory the victim's cache was going to be, with a
// group they share, and the victim's capsa used it (its owner can plant images there).
TEST(SharedCache, ACacheRootOfAnotherUsersIsRefused) {
  const OwnedDir dir(victim(), 0755);
  const std::string root = shared_cache_root(dir, attacker().uid, victim().gid);
  // The attack's step works: the victim may write there, and the attacker owns it.
  ASSERT_EQ(shell_as(victim(), "touch '" + root + "/probe' && rm '" + root + "/probe'").exit_code, 0);

  const auto used = capsa_as(victim(), {"cache", "list"}, {"CAPSA_CACHEDIR=" + root});
  EXPECT_NE(used.exit_code, 0) << "the victim used a cache the attacker owns";
  EXPECT_NE(used.err.find("belongs to uid " + std::to_string(attacker().uid)), std::string::npos) << used.err;
}

// The documented shared cache stays: root's directory, group-writable for its users.
TEST(SharedCache, RootsSharedCacheIsUsed) {
  const OwnedDir dir(victim(), 0755);
  const std::string root = shared_cache_root(dir, 0, victim().gid);
  const auto used = capsa_as(victim(), {"cache", "list"}, {"CAPSA_CACHEDIR=" + root});
  EXPECT_EQ(used.exit_code, 0) << used.err;
}

}  // namespace
}  // namespace capsa::adversarial
