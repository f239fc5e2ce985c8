// --security seccomp:PROFILE with OCI seccomp profiles, checked from inside the container:
// a denied call fails with the profile's errno, argument comparisons select calls, and
// a bad profile is one line naming the file before anything runs. Root and test user.
#include <gtest/gtest.h>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;

TEST(SeccompProfile, DeniedCallsFailWithTheProfilesErrno) {
  test::TempDir dir;
  const std::string profile =
      dir.write("deny-mkdir.json",
                R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"],
          "syscalls": [{"names": ["mkdir", "mkdirat", "a_call_no_kernel_has"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]})");
  auto result = capsa({"exec", "--security", "seccomp:" + profile, busybox_sif(), "sh", "-c",
                       "mkdir /tmp/capsa-seccomp-$$ 2>&1; grep '^Seccomp:' /proc/self/status | cut -f2"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("Permission denied"), std::string::npos)
      << "EACCES, the profile's errnoRet: " << result.out;
  EXPECT_NE(result.out.find("\n2\n"), std::string::npos) << "a filter is installed (mode 2): " << result.out;
}

TEST(SeccompProfile, ArgumentComparisonsSelectTheCalls) {
  test::TempDir dir;
  // kill(pid, SIGUSR1) is refused with EPERM; kill(pid, 0) is not.
  const std::string profile = dir.write("deny-usr1.json",
                                        R"({"defaultAction": "SCMP_ACT_ALLOW",
          "syscalls": [{"names": ["kill"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                        "args": [{"index": 1, "value": 10, "op": "SCMP_CMP_EQ"}]}]})");
  auto result =
      capsa({"exec", "--security", "seccomp:" + profile, busybox_sif(), "sh", "-c",
             "trap 'echo got USR1' USR1; kill -0 $$ && echo probe-allowed; kill -USR1 $$ || echo usr1-refused"});
  EXPECT_EQ(result.out, "probe-allowed\nusr1-refused\n") << result.err;
}

TEST(SeccompProfile, BadProfilesAreOneLineBeforeAnythingRuns) {
  test::TempDir dir;
  struct Case {
    std::string content;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"not json", "not valid JSON"},
           {R"({"defaultAction": "SCMP_ACT_NOPE"})", "unknown action \"SCMP_ACT_NOPE\""},
           {R"({"syscalls": []})", "defaultAction"},
           {R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_PDP11"]})", "unknown architecture"},
       }) {
    const std::string profile = dir.write("bad.json", c.content);
    auto result = capsa({"exec", "--security", "seccomp:" + profile, busybox_sif(), "echo", "ran"});
    EXPECT_EQ(result.exit_code, 1) << c.content;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err.rfind("capsa: error: --security seccomp:" + profile + ": ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(c.error), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  }
  auto apparmor = capsa({"exec", "--security", "apparmor:unconfined", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(apparmor.err,
            "capsa: error: --security apparmor:unconfined is not supported (capsa applies seccomp profiles only)\n");
}

}  // namespace
}  // namespace capsa::runtime
