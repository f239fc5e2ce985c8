// `capsa capability add|drop|list|avail` (cli/cmd_capability.cpp) on the capability.json
// of an installed prefix of the test's own, in Apptainer's format and with its words. add
// and drop are root's; list and avail anyone's. Root and the test user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "site_prefix.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::config {
namespace {

using testing::SitePrefix;

std::string capability_file() { return SitePrefix::get().path() + "/etc/capsa/capability.json"; }

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST(CapabilityCommand, AddListDropAsApptainerWritesTheFile) {
  const SitePrefix& site = SitePrefix::get();
  ::unlink(capability_file().c_str());
  if (::geteuid() != 0) {
    auto r = site.capsa({"capability", "add", "--user", "root", "CAP_NET_RAW"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "capsa: error: Unable to add capabilities: only root user can manage capabilities\n");
    EXPECT_NE(::access(capability_file().c_str(), F_OK), 0) << "nothing written";
    // Reading is anyone's.
    std::ofstream(capability_file()) << "{\"users\":{\"root\":[\"CAP_CHOWN\"]}}";
    r = site.capsa({"capability", "list"});
    EXPECT_EQ(r.out, "root [user]: CAP_CHOWN\n") << r.err;
    ::unlink(capability_file().c_str());
    return;
  }
  auto r = site.capsa({"capability", "add", "--user", "root", "net_raw,CAP_CHOWN"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("WARNING: Adding 'CAP_NET_RAW' capability will likely allow user root to escalate privilege"),
            std::string::npos)
      << r.err;
  r = site.capsa({"caps", "add", "-g", "root", "CAP_SYS_ADMIN"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(capability_file()),
            "{\n\t\"users\": {\n\t\t\"root\": [\n\t\t\t\"CAP_NET_RAW\",\n\t\t\t\"CAP_CHOWN\"\n\t\t]\n\t},\n"
            "\t\"groups\": {\n\t\t\"root\": [\n\t\t\t\"CAP_SYS_ADMIN\"\n\t\t]\n\t}\n}");
  EXPECT_EQ(site.capsa({"capability", "list"}).out,
            "root [user]: CAP_NET_RAW,CAP_CHOWN\nroot [group]: CAP_SYS_ADMIN\n");
  EXPECT_EQ(site.capsa({"capability", "list", "root"}).out,
            "root [user]: CAP_NET_RAW,CAP_CHOWN\nroot [group]: CAP_SYS_ADMIN\n");
  r = site.capsa({"capability", "drop", "--user", "root", "CAP_NET_RAW,CAP_KILL"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Won't drop capability 'CAP_KILL', not assigned to user root"), std::string::npos) << r.err;
  EXPECT_EQ(site.capsa({"capability", "list", "root"}).out, "root [user]: CAP_CHOWN\nroot [group]: CAP_SYS_ADMIN\n");
  EXPECT_EQ(site.capsa({"capability", "drop", "--user", "root", "CAP_CHOWN"}).exit_code, 0);
  EXPECT_EQ(site.capsa({"capability", "drop", "--group", "root", "all"}).exit_code, 0);
  EXPECT_EQ(test::read_file(capability_file()), "{}");
  r = site.capsa({"capability", "list"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "capsa: error: Unable to list capabilities: no capability set for users or groups\n");
  // Bad requests: one line each, the file unchanged.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"capability", "add", "CAP_CHOWN"},
                                              {"capability", "add", "--user", "no-such-user-capsa", "CAP_CHOWN"},
                                              {"capability", "drop", "--user", "root", "CAP_CHOWN"}}) {
    r = site.capsa(bad);
    EXPECT_EQ(r.exit_code, 1) << bad[2];
    EXPECT_EQ(lines(r.err), 1) << r.err;
  }
  EXPECT_EQ(test::read_file(capability_file()), "{}");
  ::unlink(capability_file().c_str());
}

TEST(CapabilityCommand, AvailDescribesWhatCanBeGranted) {
  const SitePrefix& site = SitePrefix::get();
  auto r = site.capsa({"capability", "avail", "net_raw"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("CAP_NET_RAW:           ", 0), 0u) << r.out;
  EXPECT_EQ(lines(r.out), 2) << "the description, then a blank line";
  r = site.capsa({"capability", "avail"});
  EXPECT_EQ(lines(r.out), 2 * 41) << "every capability Apptainer knows";
  r = site.capsa({"capability", "avail", "CAP_BOGUS"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "capsa: error: Unable to list available capabilities: unknown capabilities found in: CAP_BOGUS\n");
}

}  // namespace
}  // namespace capsa::config
