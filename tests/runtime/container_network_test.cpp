// --net --network NAME with the site's CNI networks (runtime/network/container_network.hpp),
// run by Debian's containernetworking-plugins: an address on the network inside, port
// mappings that reach the container, CNI arguments, and nothing left attached once the
// container has ended, however it ended. Root; the test user gets one line of refusal.
// Each run makes a bridge, subnet and port of its own, and removes its bridge at the end.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;
using testing::lines_of;
namespace fs = std::filesystem;

class ContainerNetwork : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) return;
    if (!fs::exists("/usr/lib/cni/bridge")) GTEST_FAIL() << "containernetworking-plugins is missing (install-deps.sh)";
    const std::string conflist = R"({"cniVersion": "1.0.0", "name": ")" + name + R"(", "plugins": [
      {"type": "bridge", "bridge": ")" +
                                 bridge + R"(", "isGateway": true, "ipMasq": true,
       "ipam": {"type": "host-local", "subnet": ")" +
                                 subnet_prefix + R"(0/24", "routes": [{"dst": "0.0.0.0/0"}],
                "dataDir": ")" + dir.path() +
                                 R"(/ipam"}},
      {"type": "firewall"},
      {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}]})";
    fs::create_directories(dir.path() + "/network");
    dir.write("network/50_test.conflist", conflist);
    config = dir.write("capsa.conf", "cni configuration path = " + dir.path() + "/network\n");
  }
  void TearDown() override {
    if (::geteuid() == 0) test::run_process({"ip", "link", "del", bridge});
  }

  test::ProcessResult run(const std::vector<std::string>& flags, const std::vector<std::string>& command) {
    std::vector<std::string> args = {"exec", "--net", "--network", name};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(busybox_sif());
    args.insert(args.end(), command.begin(), command.end());
    return capsa(args, {"CAPSA_CONFIG=" + config});
  }

  // Addresses the network still holds, interfaces on its bridge, firewall rules naming it.
  std::string left_attached() {
    std::string left;
    const fs::path ipam = dir.path() + "/ipam/" + name;
    if (fs::exists(ipam))
      for (const auto& entry : fs::directory_iterator(ipam)) {
        const std::string file = entry.path().filename();
        if (file != "lock" && file.rfind("last_reserved_ip", 0) != 0) left += "address " + file + "; ";
      }
    auto links = test::run_process({"ip", "-o", "link", "show", "master", bridge});
    if (!links.out.empty()) left += "interfaces: " + links.out;
    auto rules = test::run_process({"iptables-save"});
    for (const std::string& line : lines_of(rules.out))
      if (line.find("\"" + name + "\"") != std::string::npos) left += "rule: " + line + "; ";
    return left;
  }

  // left_attached() once the detaching process has had up to 15 s to finish.
  std::string left_once_detached() {
    std::string left = left_attached();
    for (int attempt = 0; attempt < 150 && !left.empty(); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      left = left_attached();
    }
    return left;
  }

  test::TempDir dir;
  const std::string tag = std::to_string(::getpid() % 10000);
  const std::string name = "capsatest" + tag;
  const std::string bridge = "capsabr" + tag;
  const std::string subnet_prefix = "10.231." + std::to_string(::getpid() % 250) + ".";
  const int port = 20000 + ::getpid() % 10000;
  std::string config;
};

TEST_F(ContainerNetwork, TheContainerHasAnAddressOnTheNetworkAndNothingStaysAttached) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only (the refusal is UsersGetOneLineThatSaysRootOnly)";
  auto result = run({}, {"sh", "-c",
                         "ip -4 -o addr show eth0; ip route | grep ^default; ping -c 1 -W 5 " + subnet_prefix +
                             "1 >/dev/null && echo reached"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 3U) << result.out;
  EXPECT_NE(lines[0].find("inet " + subnet_prefix), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1].rfind("default via " + subnet_prefix + "1 dev eth0", 0), 0U) << lines[1];
  EXPECT_EQ(lines[2], "reached");
  // The process that detaches the container holds capsa's stderr until it is done.
  EXPECT_EQ(left_attached(), "");
}

TEST_F(ContainerNetwork, APortMappingReachesTheContainer) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only";
  const std::string mapping = "portmap=" + std::to_string(port) + ":80/tcp";
  auto server = std::async(std::launch::async, [&] {
    return run({"--network-args", mapping}, {"sh", "-c", "echo hello from inside | nc -l -p 80"});
  });
  std::string answer;
  for (int attempt = 0; attempt < 50 && answer.empty(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    answer = test::run_process({"busybox", "nc", subnet_prefix + "1", std::to_string(port)}, "", 10).out;
  }
  EXPECT_EQ(answer, "hello from inside\n");
  auto ended = server.get();
  EXPECT_EQ(ended.exit_code, 0) << ended.err;
  EXPECT_EQ(left_attached(), "");
}

TEST_F(ContainerNetwork, CniArgumentsReachThePlugins) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only";
  auto result = run({"--network-args", "IP=" + subnet_prefix + "77"}, {"sh", "-c", "ip -4 -o addr show eth0"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("inet " + subnet_prefix + "77/24"), std::string::npos) << result.out;
  // An address outside the subnet: host-local refuses it, and nothing stays attached.
  auto refused = run({"--network-args", "IP=192.0.2.7"}, {"echo", "ran"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err.rfind(
                "capsa: error: --network " + name + ": the CNI plugin bridge could not attach the container: ", 0),
            0U)
      << refused.err;
  EXPECT_EQ(left_attached(), "");
}

// capsa killed at growing moments: before, during and after the plugins' ADD, and while
// the command runs. Whatever was attached is detached.
TEST_F(ContainerNetwork, CapsaKilledAtAnyMomentLeavesNothingAttached) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only";
  for (int delay_ms : {0, 15, 30, 60, 90, 150, 400}) {
    SCOPED_TRACE("killed after " + std::to_string(delay_ms) + " ms");
    const pid_t capsa_pid = ::fork();
    ASSERT_GE(capsa_pid, 0);
    if (capsa_pid == 0) {
      ::setenv("CAPSA_CONFIG", config.c_str(), 1);
      const std::string image = busybox_sif();
      const std::string binary = test::capsa_binary();
      ::execl(binary.c_str(), binary.c_str(), "exec", "--net", "--network", name.c_str(), "--network-args",
              ("portmap=" + std::to_string(port) + ":80/tcp").c_str(), image.c_str(), "sleep", "60", nullptr);
      ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ::kill(capsa_pid, SIGKILL);
    ::waitpid(capsa_pid, nullptr, 0);
    EXPECT_EQ(left_once_detached(), "");
  }
}

TEST_F(ContainerNetwork, AnInstanceKeepsItsAddressUntilItStops) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only";
  const std::string instance = "net" + tag;
  auto started =
      capsa({"instance", "start", "--net", "--network", name, busybox_sif(), instance}, {"CAPSA_CONFIG=" + config});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  auto joined = capsa({"exec", "instance://" + instance, "ip", "-4", "-o", "addr", "show", "eth0"});
  EXPECT_NE(joined.out.find("inet " + subnet_prefix), std::string::npos) << joined.out << joined.err;
  EXPECT_NE(left_attached(), "") << "the running instance holds its address";
  auto stopped = capsa({"instance", "stop", instance});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_EQ(left_once_detached(), "");
}

TEST_F(ContainerNetwork, BadNetworksAndArgumentsFailInOneLineBeforeAnythingRuns) {
  if (::geteuid() != 0) GTEST_SKIP() << "root only";
  auto unknown =
      capsa({"exec", "--net", "--network", "nosuch", busybox_sif(), "echo", "ran"}, {"CAPSA_CONFIG=" + config});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err, "capsa: error: --network nosuch: no network of that name in " + dir.path() +
                             "/network (its *.conflist files name the networks; the cni configuration path of "
                             "capsa.conf says where)\n");
  auto bad = run({"--network-args", "portmap=80/sctp"}, {"echo", "ran"});
  EXPECT_EQ(bad.err, "capsa: error: --network-args portmap=80/sctp: only tcp and udp protocol can be specified\n");
  auto without = capsa({"exec", "--network-args", "IP=10.0.0.1", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(without.err, "capsa: error: --network-args needs --net with a CNI network (--network bridge, ...)\n");
  EXPECT_EQ(left_attached(), "");
}

TEST_F(ContainerNetwork, UsersGetOneLineThatSaysRootOnly) {
  if (::geteuid() == 0) GTEST_SKIP() << "the unprivileged side";
  auto result = capsa({"exec", "--net", "--network", "bridge", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            "capsa: error: --network bridge needs root: CNI networks (bridge, ptp, ...) are set up by root only; use "
            "--network none for a private network namespace with only a loopback, or leave out --net to use the "
            "host's network\n");
}

}  // namespace
}  // namespace capsa::runtime
