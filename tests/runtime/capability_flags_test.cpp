// --no-privs, --keep-privs, --add-caps and --drop-caps, read back from /proc/self/status
// inside the container. Root keeps every capability by default (Apptainer's `root default
// capabilities = full`); anyone else has none after exec, and only the bounding set moves.
// Root and test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>

#include "runtime/run_support.hpp"
#include "support/process.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;
using testing::lines_of;

constexpr std::uint64_t kNetRaw = 1ULL << 13;    // CAP_NET_RAW
constexpr std::uint64_t kSysAdmin = 1ULL << 21;  // CAP_SYS_ADMIN
constexpr std::uint64_t kChown = 1ULL << 0;      // CAP_CHOWN

// CapEff and CapBnd of the command, as numbers.
struct Capabilities {
  std::uint64_t effective = 0;
  std::uint64_t bounding = 0;
};

Capabilities capabilities_with(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"exec"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {busybox_sif(), "sh", "-c", "grep -E '^Cap(Eff|Bnd):' /proc/self/status | cut -f2"});
  auto result = capsa(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  if (lines.size() != 2) {
    ADD_FAILURE() << result.out;
    return {};
  }
  return {std::stoull(lines[0], nullptr, 16), std::stoull(lines[1], nullptr, 16)};
}

TEST(CapabilityFlags, DropCapsLeavesTheBoundingSet) {
  Capabilities dropped = capabilities_with({"--drop-caps", "net_raw,CAP_SYS_ADMIN"});
  EXPECT_EQ(dropped.bounding & (kNetRaw | kSysAdmin), 0u);
  EXPECT_NE(dropped.bounding & kChown, 0u) << "only the named ones go";
  EXPECT_EQ(dropped.effective & (kNetRaw | kSysAdmin), 0u);
  auto unknown = capsa({"exec", "--drop-caps", "CAP_BOGUS", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err,
            "capsa: error: unknown capability \"CAP_BOGUS\" (names as in capabilities(7), e.g. CAP_NET_RAW)\n");
}

TEST(CapabilityFlags, RootKeepsEverythingUnlessNoPrivs) {
  if (::geteuid() != 0) {
    // Anyone else has nothing to keep: refused before anything runs.
    auto keep = capsa({"exec", "--keep-privs", busybox_sif(), "echo", "ran"});
    EXPECT_EQ(keep.exit_code, 1);
    EXPECT_EQ(keep.out, "");
    EXPECT_EQ(capabilities_with({}).effective, 0u) << "an unprivileged command has no capability";
    return;
  }
  Capabilities by_default = capabilities_with({});
  EXPECT_NE(by_default.effective & kSysAdmin, 0u) << "root keeps every capability by default";
  EXPECT_EQ(capabilities_with({"--keep-privs"}).effective, by_default.effective);
  Capabilities none = capabilities_with({"--no-privs"});
  EXPECT_EQ(none.effective, 0u);
  EXPECT_EQ(none.bounding, 0u) << "nothing to regain through an exec";
  Capabilities only_chown = capabilities_with({"--no-privs", "--add-caps", "CAP_CHOWN"});
  EXPECT_EQ(only_chown.effective, kChown);
  EXPECT_EQ(only_chown.bounding, kChown);
  auto environment = capsa({"exec", busybox_sif(), "grep", "^CapEff:", "/proc/self/status"}, {"APPTAINER_NO_PRIVS=1"});
  EXPECT_EQ(environment.out, "CapEff:\t0000000000000000\n") << environment.err;
}

// Not root: --add-caps grants the capabilities in the container's user namespace, as
// Apptainer does without its setuid starter (capability.json is not consulted there).
TEST(CapabilityFlags, AddCapsGrantsOthersCapabilitiesInTheUserNamespace) {
  if (::geteuid() == 0) GTEST_SKIP() << "root's --add-caps: RootKeepsEverythingUnlessNoPrivs";
  Capabilities added = capabilities_with({"--add-caps", "net_raw,CAP_CHOWN"});
  EXPECT_EQ(added.effective, kNetRaw | kChown);
  Capabilities dropped = capabilities_with({"--add-caps", "CAP_NET_RAW,CAP_CHOWN", "--drop-caps", "CAP_CHOWN"});
  EXPECT_EQ(dropped.effective, kNetRaw) << "--drop-caps wins";
  // The command's own user namespace is where they act: not on the host's files.
  auto r = capsa({"exec", "--add-caps", "CAP_DAC_OVERRIDE", "-B", "/etc/shadow:/mnt/shadow", busybox_sif(), "sh", "-c",
                  "grep CapEff /proc/self/status; cat /mnt/shadow"});
  EXPECT_NE(r.out.find("CapEff:\t0000000000000002"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.exit_code, 0) << "read the host's /etc/shadow";
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace capsa::runtime
