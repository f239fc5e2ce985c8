// --allow-setuid (APPTAINER_ALLOW_SETUID): root's container has no nosuid mount, the
// image's included, and its command runs without no_new_privs, so setuid programs take
// effect; anyone else gets Apptainer's refusal in one line. Root and the test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

#include "runtime/run_support.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;

// The mount options of the container's "/" and its NoNewPrivs, as the command saw them.
struct Seen {
  std::string root_options;
  std::string no_new_privs;
  int nosuid_mounts = 0;
};

Seen seen_with(const std::vector<std::string>& flags) {
  std::vector<std::string> args = {"exec"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {busybox_sif(), "sh", "-c", "grep NoNewPrivs /proc/self/status; cat /proc/self/mountinfo"});
  auto r = capsa(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Seen seen;
  for (const std::string& line : testing::lines_of(r.out)) {
    if (line.rfind("NoNewPrivs:", 0) == 0) {
      seen.no_new_privs = line.substr(line.find_last_of(" \t") + 1);
      continue;
    }
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string word; fields >> word;) words.push_back(word);
    if (words.size() < 6) continue;
    if (words[4] == "/") seen.root_options = words[5];
    if (("," + words[5] + ",").find(",nosuid,") != std::string::npos) ++seen.nosuid_mounts;
  }
  return seen;
}

bool has_nosuid(const std::string& options) { return ("," + options + ",").find(",nosuid,") != std::string::npos; }

TEST(AllowSetuid, RootMountsTheImageWithoutNosuid) {
  if (::geteuid() != 0) {
    auto r = capsa({"exec", "--allow-setuid", busybox_sif(), "echo", "ran"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "capsa: error: --allow-setuid requires root privileges\n");
    r = capsa({"exec", busybox_sif(), "echo", "ran"}, {"APPTAINER_ALLOW_SETUID=1"});
    EXPECT_EQ(r.exit_code, 1) << "the variable asks the same";
    return;
  }
  const Seen plain = seen_with({});
  EXPECT_TRUE(has_nosuid(plain.root_options)) << plain.root_options;
  EXPECT_EQ(plain.no_new_privs, "1");
  const Seen allowed = seen_with({"--allow-setuid"});
  ASSERT_FALSE(allowed.root_options.empty());
  EXPECT_FALSE(has_nosuid(allowed.root_options)) << allowed.root_options;
  EXPECT_EQ(allowed.nosuid_mounts, 0) << "no mount of the container is nosuid";
  EXPECT_EQ(allowed.no_new_privs, "0") << "setuid programs may take effect";
  const Seen underlay = seen_with({"--allow-setuid", "--underlay"});
  EXPECT_FALSE(has_nosuid(underlay.root_options)) << underlay.root_options;
  // In a user namespace it changes nothing, as in Apptainer.
  const Seen userns = seen_with({"--allow-setuid", "--userns"});
  EXPECT_TRUE(has_nosuid(userns.root_options)) << userns.root_options;
  EXPECT_EQ(userns.no_new_privs, "1");
}

}  // namespace
}  // namespace capsa::runtime
