#include "util/install_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace capsa {
namespace {

TEST(InstallLayout, ThePrefixOfAnInstalledBinary) {
  EXPECT_EQ(relocated_prefix("/opt/capsa-1.0/bin/capsa"), "/opt/capsa-1.0");
  EXPECT_EQ(relocated_prefix("/home/u/.local/libexec/capsa/capsa-full"), "/home/u/.local");
  EXPECT_EQ(relocated_prefix("/usr/bin/capsa"), "/usr");
  EXPECT_EQ(relocated_prefix("/bin/capsa"), "");  // the prefix would be "/": nothing to look in
}

TEST(InstallLayout, TheDistributionPrefixKeepsItsConfigurationInEtc) {
  EXPECT_EQ(prefix_sysconfdir("/usr"), "/etc");  // a .deb or .rpm: /usr/bin/capsa, /etc/capsa
  EXPECT_EQ(prefix_sysconfdir("/usr/local"), "/usr/local/etc");
  EXPECT_EQ(prefix_sysconfdir("/opt/capsa-1.0"), "/opt/capsa-1.0/etc");
}

TEST(InstallLayout, ABuildTreeHasNoPrefix) {
  EXPECT_EQ(relocated_prefix("/work/capsa/build/src/cli/capsa"), "");
  EXPECT_EQ(relocated_prefix("/work/capsa/build/libexec/capsa-full"), "");
  EXPECT_EQ(relocated_prefix(""), "");
}

TEST(InstallLayout, TheRunningBinarysLayoutComesBeforeTheConfiguredPaths) {
  // This test binary lives in a build tree: beside itself first, configured path last.
  std::vector<std::string> libexec = libexec_candidates("capsa-full");
  ASSERT_GE(libexec.size(), 2u);
  EXPECT_EQ(libexec.front(), running_executable().substr(0, running_executable().rfind('/')) + "/capsa-full");
  EXPECT_EQ(libexec.back().substr(libexec.back().size() - 17), "/capsa/capsa-full");
  std::vector<std::string> config = config_candidates("capsa.conf");
  ASSERT_FALSE(config.empty());
  EXPECT_EQ(config.back().substr(config.back().size() - 17), "/capsa/capsa.conf");
}

TEST(InstallLayout, FirstReadableSkipsWhatIsMissing) {
  EXPECT_EQ(first_readable({"/nonexistent/a", "/proc/self/status"}), "/proc/self/status");
  EXPECT_EQ(first_readable({"/nonexistent/a"}), "");
}

}  // namespace
}  // namespace capsa
