// CNI network configurations and --network-args (runtime/network/cni_config.hpp): files
// found by network name, malformed ones named, and Apptainer's forms of the arguments.
#include "runtime/network/cni_config.hpp"

#include <gtest/gtest.h>

#include "support/error_text.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

using nlohmann::json;

const char* const kBridge = R"({"cniVersion": "1.0.0", "name": "bridge", "plugins": [
  {"type": "bridge", "bridge": "sbr0", "ipam": {"type": "host-local", "subnet": "10.22.0.0/16"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]})";

using test::error_text;

TEST(CniConfig, FindsANetworkByTheNameInsideItsFile) {
  test::TempDir dir;
  dir.write("00_bridge.conflist", kBridge);
  dir.write("10_single.conf", R"({"cniVersion": "0.4.0", "name": "single", "type": "ptp"})");
  dir.write("README", "not a configuration");
  CniNetwork bridge = load_cni_network(dir.path(), "bridge");
  EXPECT_EQ(bridge.cni_version, "1.0.0");
  ASSERT_EQ(bridge.plugins.size(), 2U);
  EXPECT_EQ(bridge.plugins[0]["type"], "bridge");
  EXPECT_TRUE(bridge.has_capability("portMappings"));
  EXPECT_FALSE(bridge.has_capability("ipRanges"));
  CniNetwork single = load_cni_network(dir.path(), "single");
  ASSERT_EQ(single.plugins.size(), 1U);
  EXPECT_EQ(single.plugins[0]["type"], "ptp");
}

TEST(CniConfig, AMissingNetworkOrABadFileIsNamed) {
  test::TempDir dir;
  dir.write("00_bridge.conflist", kBridge);
  EXPECT_EQ(error_text([&] { load_cni_network(dir.path(), "ptp"); }),
            "--network ptp: no network of that name in " + dir.path() +
                " (its *.conflist files name the networks; the cni configuration path of capsa.conf says where)");
  dir.write("00_a_broken.conflist", "{\"name\": ");
  EXPECT_NE(error_text([&] {
              load_cni_network(dir.path(), "bridge");
            }).find(dir.path() + "/00_a_broken.conflist: not a CNI network configuration"),
            std::string::npos);
  test::TempDir other;
  other.write("01.conflist", R"({"cniVersion": "1.0.0", "name": "x", "plugins": [{"type": "../../bin/sh"}]})");
  EXPECT_EQ(error_text([&] { load_cni_network(other.path(), "x"); }),
            other.path() + "/01.conflist: every plugin of network x needs a \"type\" naming a program");
  EXPECT_NE(error_text([&] { load_cni_network(other.path() + "/missing", "x"); }).find("cni configuration path"),
            std::string::npos);
}

TEST(CniConfig, NetworkArgsInApptainersForms) {
  test::TempDir dir;
  dir.write("00_bridge.conflist", kBridge);
  dir.write("10_ptp.conflist", R"({"cniVersion": "1.0.0", "name": "ptp", "plugins": [{"type": "ptp",
    "capabilities": {"ipRanges": true}}]})");
  const std::vector<CniNetwork> networks = {load_cni_network(dir.path(), "bridge"),
                                            load_cni_network(dir.path(), "ptp")};
  auto requests = parse_network_args(
      {"portmap=8080:80/tcp", "bridge:portmap=53/udp;IP=10.22.0.5", "ptp:ipRange=10.23.1.0/24;K=v"}, networks);
  ASSERT_EQ(requests.size(), 2U);
  EXPECT_EQ(requests[0].port_mappings, json::parse(R"([{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
                            {"hostPort": 53, "containerPort": 53, "protocol": "udp"}])"));
  EXPECT_EQ(requests[0].args, (std::vector<std::pair<std::string, std::string>>{{"IP", "10.22.0.5"}}));
  EXPECT_EQ(requests[1].ip_ranges, json::parse(R"([[{"subnet": "10.23.1.0/24"}]])"));
  EXPECT_EQ(requests[1].args, (std::vector<std::pair<std::string, std::string>>{{"K", "v"}}));
  EXPECT_TRUE(requests[1].port_mappings.empty());
}

TEST(CniConfig, BadNetworkArgsSayWhatIsWrong) {
  test::TempDir dir;
  dir.write("00_bridge.conflist", kBridge);
  const std::vector<CniNetwork> networks = {load_cni_network(dir.path(), "bridge")};
  auto error = [&](const std::string& value) { return error_text([&] { parse_network_args({value}, networks); }); };
  EXPECT_EQ(error("portmap=8080:80"),
            "--network-args portmap=8080:80: badly formatted, it must be "
            "portmap=hostPort:containerPort/protocol (or hostPort/protocol)");
  EXPECT_EQ(error("portmap=8080/sctp"), "--network-args portmap=8080/sctp: only tcp and udp protocol can be specified");
  EXPECT_EQ(error("portmap=0:80/tcp"),
            "--network-args portmap=0:80/tcp: the host port must be a number from 1 to 65535");
  EXPECT_EQ(error("portmap=80:70000/tcp"),
            "--network-args portmap=80:70000/tcp: the container port must be a number from 1 to 65535");
  EXPECT_EQ(error("ptp:IP=1.2.3.4"), "--network-args ptp:IP=1.2.3.4: network ptp was not given with --network");
  EXPECT_EQ(error("ipRange=10.0.0.0/8"),
            "--network-args ipRange=10.0.0.0/8: network bridge has no ipRanges capability");
  EXPECT_EQ(error("IP"), "--network-args IP: \"IP\" is not KEY=VALUE");
}

}  // namespace
}  // namespace capsa::runtime
