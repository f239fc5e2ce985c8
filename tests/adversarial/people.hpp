#pragma once
// The people of the adversarial suite: two unprivileged users who do not trust each other
// (scripts/create-test-user.sh makes both) and root, who runs the suite and acts for them.
// Each test plays one of them against the other, or against root's restrictions, and
// shows the attack fails: the first of its checks shows the attack's step works outside
// capsa (so that the refusal is capsa's doing and the test could fail).
#include <sys/types.h>

#include <string>
#include <vector>

#include "support/process.hpp"

namespace capsa::adversarial {

struct Person {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string name;
  std::string home;
};

// The one whose files, instances and containers are attacked ($CAPSA_TEST_USER, capsa-test).
const Person& victim();
// The one who attacks ($CAPSA_TEST_OTHER_USER, capsa-other).
const Person& attacker();

// The command line that runs ARGV as `who` (uid, gid, their supplementary groups, no
// capabilities), with HOME, USER and LOGNAME theirs and `env` ("NAME=VALUE") added to the
// suite's environment: for test::Background, or run_as below.
std::vector<std::string> argv_as(const Person& who, const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env = {});
// argv_as(...) run to its end.
test::ProcessResult run_as(const Person& who, const std::vector<std::string>& argv,
                           const std::vector<std::string>& env = {}, int timeout_seconds = 60);
// `sh -c SCRIPT` as `who`.
test::ProcessResult shell_as(const Person& who, const std::string& script, int timeout_seconds = 60);

// The root-owned installed capsa the site's restrictions live beside
// (PREFIX/etc/capsa/capsa.conf, root's, 0644): config/site_prefix.hpp, shared by the suite.
std::string site_capsa();
// Replaces the site's capsa.conf (root-owned, 0644).
void write_site_conf(const std::string& text);
// The site's PREFIX/libexec/capsa/capsa-full, which a user may also run directly.
std::string site_capsa_full();
// `site_capsa() ARGS...` as `who`.
test::ProcessResult capsa_as(const Person& who, const std::vector<std::string>& args,
                             const std::vector<std::string>& env = {}, int timeout_seconds = 60);

// A directory of `owner`'s (mode `mode`) under /tmp, removed with everything in it at the
// end of the scope.
class OwnedDir {
 public:
  explicit OwnedDir(const Person& owner, mode_t mode = 0755);
  ~OwnedDir();
  OwnedDir(const OwnedDir&) = delete;
  OwnedDir& operator=(const OwnedDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  // Writes `content` to path()/name as the owner's file (mode `mode`); the full path.
  std::string write(const std::string& name, const std::string& content, mode_t mode = 0644) const;

 private:
  std::string path_;
  uid_t uid_;
  gid_t gid_;
};

// A small SIF (busybox) that `owner` owns, in `dir`.
std::string image_owned_by(const Person& owner, const OwnedDir& dir, const std::string& name);

}  // namespace capsa::adversarial
