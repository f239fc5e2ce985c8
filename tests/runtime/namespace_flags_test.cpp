// Apptainer's namespace and process flags: -p/--pid, --no-init, -i/--ipc, --uts,
// --hostname, -n/--net with --network none, --dns, --no-umask, --no-eval, --compat,
// each checked from inside the container. Root and test user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/run_support.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

using testing::busybox_sif;
using testing::capsa;
using testing::lines_of;
using testing::own_namespace;

// The umask the next capsa inherits, for the length of a scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : saved_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(saved_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t saved_;
};

TEST(NamespaceFlags, PidGivesAPidNamespaceWithAShimInit) {
  auto result = capsa({"exec", "--pid", busybox_sif(), "sh", "-c",
                       "readlink /proc/self/ns/pid; echo $$; cat /proc/1/cmdline | tr '\\0' ' '; echo; exit 7"});
  EXPECT_EQ(result.exit_code, 7) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out;
  EXPECT_NE(lines[0], own_namespace("pid"));
  EXPECT_EQ(lines[1], "2") << "the shim init is PID 1";
  EXPECT_NE(lines[2].find("capsa"), std::string::npos) << "PID 1 is capsa's init: " << lines[2];
}

TEST(NamespaceFlags, NoInitMakesTheCommandPidOne) {
  auto result = capsa({"exec", "-p", "--no-init", busybox_sif(), "sh", "-c", "echo $$; exit 3"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_EQ(result.out, "1\n");
}

TEST(NamespaceFlags, NoPidUndoesContainallsPidNamespace) {
  auto result = capsa({"exec", "--containall", "--no-pid", busybox_sif(), "readlink", "/proc/self/ns/pid"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, own_namespace("pid") + "\n");
}

TEST(NamespaceFlags, IpcAndUtsAreNamespacesOfTheirOwn) {
  auto result = capsa({"exec", "-i", "--uts", busybox_sif(), "sh", "-c",
                       "for ns in ipc uts net pid; do readlink /proc/self/ns/$ns; done"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 4u) << result.out;
  EXPECT_NE(lines[0], own_namespace("ipc"));
  EXPECT_NE(lines[1], own_namespace("uts"));
  EXPECT_EQ(lines[2], own_namespace("net")) << "only what was asked for";
  EXPECT_EQ(lines[3], own_namespace("pid"));
}

TEST(NamespaceFlags, HostnameImpliesUtsAndWritesEtcHostname) {
  auto result = capsa({"exec", "--hostname", "capsa-box", busybox_sif(), "sh", "-c",
                       "hostname; cat /etc/hostname; readlink /proc/self/ns/uts"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out;
  EXPECT_EQ(lines[0], "capsa-box");
  EXPECT_EQ(lines[1], "capsa-box");
  EXPECT_NE(lines[2], own_namespace("uts"));
  auto from_environment = capsa({"exec", busybox_sif(), "hostname"}, {"APPTAINER_HOSTNAME=from-env"});
  EXPECT_EQ(from_environment.out, "from-env\n") << from_environment.err;
}

TEST(NamespaceFlags, NetworkNoneHasOnlyAnUpLoopback) {
  // The namespace, the devices /proc/net/dev lists, and the loopback's state.
  const std::string script =
      "readlink /proc/self/ns/net; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; ip -o link show lo";
  auto result = capsa({"exec", "--net", "--network", "none", busybox_sif(), "sh", "-c", script});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 3u) << "no device but the loopback: " << result.out;
  EXPECT_NE(lines[0], own_namespace("net"));
  EXPECT_EQ(lines[1], "lo");
  EXPECT_NE(lines[2].find(",UP"), std::string::npos) << "the loopback is up: " << lines[2];
  // --network alone implies --net, as in Apptainer.
  auto implied = capsa({"exec", "--network", "none", busybox_sif(), "readlink", "/proc/self/ns/net"});
  EXPECT_NE(implied.out, own_namespace("net") + "\n") << implied.err;
}

TEST(NamespaceFlags, NetnsPathJoinsANamedNetworkNamespace) {
  const std::string name = "capsa-test-" + std::to_string(::getpid());
  if (::geteuid() != 0) {
    // Only root may join a namespace the host owns; anyone else is told so before anything runs.
    auto refused = capsa({"exec", "--netns-path", "/run/netns/" + name, busybox_sif(), "echo", "ran"});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_EQ(refused.err, "capsa: error: --netns-path /run/netns/" + name +
                               " needs root: capsa cannot join a network namespace from its user namespace\n");
    return;
  }
  ASSERT_EQ(test::run_process({"ip", "netns", "add", name}).exit_code, 0);
  std::string expected = test::run_process({"ip", "netns", "exec", name, "readlink", "/proc/self/ns/net"}).out;
  auto joined = capsa({"exec", "--netns-path", "/run/netns/" + name, busybox_sif(), "readlink", "/proc/self/ns/net"});
  auto with_net =
      capsa({"exec", "--net", "--netns-path", "/run/netns/" + name, busybox_sif(), "readlink", "/proc/self/ns/net"});
  test::run_process({"ip", "netns", "delete", name});
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  EXPECT_EQ(joined.out, expected);
  EXPECT_NE(expected, own_namespace("net") + "\n");
  EXPECT_EQ(with_net.out, expected) << "the existing namespace wins over --net, with Apptainer's warning";
  EXPECT_NE(with_net.err.find("cannot join existing --netns-path"), std::string::npos) << with_net.err;
}

// --net alone asks for Apptainer's default network, bridge: the test user is refused it
// (CNI networks are root's), root finds none in an empty configuration folder
// (container_network_test.cpp runs real ones); "none" goes with no other network.
TEST(NamespaceFlags, CniNetworksThatCannotBeMadeAreRefusedBeforeAnythingRuns) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/network");
  const std::string config = dir.write("capsa.conf", "cni configuration path = " + dir.path() + "/network\n");
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--net"}, std::vector<std::string>{"-n", "--network", "bridge"}}) {
    std::vector<std::string> args = {"exec"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {busybox_sif(), "echo", "ran"});
    auto result = capsa(args, {"CAPSA_CONFIG=" + config});
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
    const std::string expected = ::geteuid() == 0 ? "--network bridge: no network of that name in " + dir.path()
                                                  : "--network bridge needs root: CNI networks";
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
  }
  auto mixed = capsa({"exec", "--network", "none,ptp", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(mixed.err, "capsa: error: --network none cannot be combined with other networks\n");
}

TEST(NamespaceFlags, DnsWritesTheContainersResolvConf) {
  auto result = capsa({"exec", "--dns", "192.0.2.1, 2001:db8::1", busybox_sif(), "cat", "/etc/resolv.conf"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "nameserver 192.0.2.1\nnameserver 2001:db8::1\n");
  auto bad = capsa({"exec", "--dns", "192.0.2.1,not-an-ip", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err, "capsa: error: --dns: \"not-an-ip\" is not a valid IP address\n");
}

TEST(NamespaceFlags, UmaskIsTheCallersUnlessNoUmask) {
  ScopedUmask mask(027);
  auto inherited = capsa({"exec", busybox_sif(), "sh", "-c", "umask"});
  EXPECT_EQ(inherited.out, "0027\n") << inherited.err;
  auto reset = capsa({"exec", "--no-umask", busybox_sif(), "sh", "-c", "umask"});
  EXPECT_EQ(reset.out, "0022\n") << reset.err;
}

TEST(NamespaceFlags, NoEvalTakesInjectedValuesLiterally) {
  const std::string value = "APPTAINERENV_CAPSA_LITERAL=$(echo sub) and 'quoted'";
  auto evaluated = capsa({"exec", busybox_sif(), "sh", "-c", "echo \"$CAPSA_LITERAL\""}, {value});
  EXPECT_EQ(evaluated.out, "sub and 'quoted'\n") << evaluated.err;
  auto literal = capsa(
      {"exec", "--no-eval", busybox_sif(), "sh", "-c", "echo \"$CAPSA_LITERAL\"; echo $APPTAINER_NO_EVAL"}, {value});
  EXPECT_EQ(literal.out, "$(echo sub) and 'quoted'\n1\n") << literal.err;
}

TEST(NamespaceFlags, CompatIsContainallNoInitNoUmaskNoEvalAndWritableTmpfs) {
  ScopedUmask mask(077);
  const std::string script =
      "echo $$; umask; echo \"[$CAPSA_HOST_ONLY]\"; touch /new-file && echo writable; readlink /proc/self/ns/ipc";
  auto result = capsa({"exec", "--compat", busybox_sif(), "sh", "-c", script}, {"CAPSA_HOST_ONLY=visible"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 5u) << result.out;
  EXPECT_EQ(lines[0], "1") << "no shim init";
  EXPECT_EQ(lines[1], "0022");
  EXPECT_EQ(lines[2], "[]") << "clean environment";
  EXPECT_EQ(lines[3], "writable");
  EXPECT_NE(lines[4], own_namespace("ipc"));
}

TEST(NamespaceFlags, ScratchGivesFreshDirectoriesKeptUnderTheWorkdir) {
  const std::string script =
      "touch /scratch/a /work2/b && ls /scratch /work2 && grep -c ' /scratch ' /proc/self/mountinfo";
  auto fresh = capsa({"exec", "-S", "/scratch,/work2", busybox_sif(), "sh", "-c", script});
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_EQ(fresh.out, "/scratch:\na\n\n/work2:\nb\n1\n");
  test::TempDir work;
  auto kept =
      capsa({"exec", "-W", work.path(), "--scratch", "/scratch", busybox_sif(), "sh", "-c", "echo kept > /scratch/f"});
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(test::read_file(work / "scratch/scratch/f"), "kept\n");
  auto from_environment =
      capsa({"exec", busybox_sif(), "sh", "-c", "touch /env-scratch/x && echo ok"}, {"APPTAINER_SCRATCH=/env-scratch"});
  EXPECT_EQ(from_environment.out, "ok\n") << from_environment.err;
  auto relative = capsa({"exec", "-S", "scratch", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(relative.exit_code, 1);
  EXPECT_EQ(relative.err,
            "capsa: error: --scratch scratch: give an absolute path inside the container, such as /scratch\n");
}

TEST(NamespaceFlags, ContainlibsBindsHostLibrariesIntoSingularityDLibs) {
  test::TempDir host;
  const std::string library = host.write("libcapsa-contained.so.1", "not really a library\n");
  auto result = capsa({"exec", "--containlibs", library, busybox_sif(), "sh", "-c",
                       "cat /.singularity.d/libs/libcapsa-contained.so.1; echo \"$LD_LIBRARY_PATH\""});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "not really a library\n/.singularity.d/libs\n");
  auto missing = capsa({"exec", "--containlibs", host / "libnone.so", busybox_sif(), "echo", "ran"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("--containlibs " + (host / "libnone.so")), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace capsa::runtime
