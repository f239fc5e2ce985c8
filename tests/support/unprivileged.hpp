#pragma once
// Running one test case's body as the unprivileged test user, from a suite that runs as
// root: the body runs in a forked child that has dropped to that user's uid/gid.
#include <functional>
#include <optional>
#include <string>

namespace capsa::test {

struct TestUser {
  unsigned uid;
  unsigned gid;
  std::string name;
  std::string home;
};

// The unprivileged test user ($CAPSA_TEST_USER, default capsa-test), if it exists.
std::optional<TestUser> test_user();

// Runs `body` as the test user (or as is, when already unprivileged) and returns its
// exit status: 0 when the body returned true. A gtest assertion inside `body` does not
// reach the parent; return false (and print why) instead.
int run_as_test_user(const std::function<bool()>& body);

// Collects failures in a forked child (run_as_test_user, in_private_mount_namespace),
// where gtest assertions do not reach the parent: `expect` notes what failed and returns
// `ok`; `report` prints the failures to stderr and says whether all held (the child's
// result).
struct ChildChecks {
  std::string failures;
  bool expect(bool ok, const std::string& what) {
    if (!ok) failures += "  " + what + "\n";
    return ok;
  }
  bool report() const;
};

}  // namespace capsa::test
