#include "support/unprivileged.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace capsa::test {

std::optional<TestUser> test_user() {
  const char* name = std::getenv("CAPSA_TEST_USER");
  passwd* pw = ::getpwnam(name && *name ? name : "capsa-test");
  if (pw == nullptr) return std::nullopt;
  return TestUser{pw->pw_uid, pw->pw_gid, pw->pw_name, pw->pw_dir};
}

int run_as_test_user(const std::function<bool()>& body) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::geteuid() == 0) {
      auto user = test_user();
      if (!user) {
        std::fprintf(stderr, "run_as_test_user: no test user; run scripts/create-test-user.sh\n");
        ::_exit(77);
      }
      if (::setgroups(0, nullptr) != 0 || ::setgid(user->gid) != 0 || ::setuid(user->uid) != 0) {
        std::perror("run_as_test_user: dropping privileges");
        ::_exit(98);
      }
      ::setenv("HOME", user->home.c_str(), 1);
    }
    bool ok = body();
    std::fflush(nullptr);
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool ChildChecks::report() const {
  if (!failures.empty()) std::fprintf(stderr, "failed in the child process:\n%s", failures.c_str());
  return failures.empty();
}

}  // namespace capsa::test
