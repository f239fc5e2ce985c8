// run_in_sandbox in each way of being root that the calling user has: real root (the
// .root run), fakeroot with subordinate ids and emulated fakeroot (the .user run; the
// emulated one also as root). Observed from outside: `id -u` inside, chown, files landing
// in the sandbox directory, exit statuses, nothing left mounted, and apt-get installing
// a package from this machine's Debian mirror inside the test Debian image.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <memory>
#include <sstream>

#include "gpu/fake_driver.hpp"
#include "runtime/sandbox_run.hpp"
#include "squashfs/reader.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"

namespace capsa::runtime {
namespace {

using test::run_process;
using test::TempDir;

const std::vector<std::string> kEnv = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                       "HOME=/root", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"};

// The root modes this user can test: real root only as root; subid where the user has ranges.
std::vector<RootMode> modes_here() {
  std::vector<RootMode> modes;
  if (::geteuid() == 0) modes.push_back(RootMode::real_root);
  if (::geteuid() != 0 && resolve_root_mode(RootMode::fakeroot_auto) == RootMode::fakeroot_subid)
    modes.push_back(RootMode::fakeroot_subid);
  modes.push_back(RootMode::fakeroot_emulated);
  return modes;
}

std::string mode_label(RootMode mode) {
  switch (mode) {
    case RootMode::real_root: return "real_root";
    case RootMode::fakeroot_subid: return "fakeroot_subid";
    case RootMode::fakeroot_emulated: return "fakeroot_emulated";
    default: return "auto";
  }
}

void unpack_for(const std::string& sif, const std::string& dir, RootMode mode) {
  ASSERT_NO_THROW(runtime::unpack_sandbox(sif, dir, mode));
}

// Owner ids of every entry of a squashfs image, by absolute path.
std::map<std::string, std::pair<std::uint32_t, std::uint32_t>> owners_in_image(const std::string& image) {
  struct Owners : squashfs::TreeVisitor {
    std::vector<std::string> dirs;
    std::map<std::string, std::pair<std::uint32_t, std::uint32_t>> owners;
    std::string path(const squashfs::Entry& e) const {
      std::string p;
      for (const auto& d : dirs) p += "/" + d;
      return e.name.empty() ? (p.empty() ? "/" : p) : p + "/" + e.name;
    }
    void enter_directory(const squashfs::Entry& e) override {
      owners[path(e)] = {e.uid, e.gid};
      if (!e.name.empty()) dirs.push_back(e.name);
    }
    void leave_directory(const squashfs::Entry& e) override {
      if (!e.name.empty()) dirs.pop_back();
    }
    void visit(const squashfs::Entry& e, const ReadContent&) override { owners[path(e)] = {e.uid, e.gid}; }
  } visitor;
  UniqueFd fd = open_file(image, O_RDONLY);
  squashfs::Reader reader(fd.get(), 0, file_size(fd.get()), image);
  reader.walk(visitor);
  return visitor.owners;
}

BindSpec bind_of(const std::string& source, const std::string& destination, bool read_only = false) {
  BindSpec spec;
  spec.source = source;
  spec.destination = destination;
  spec.read_only = read_only;
  return spec;
}

std::string mountinfo() { return test::read_file("/proc/self/mountinfo"); }

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

class SandboxRun : public ::testing::TestWithParam<RootMode> {
 protected:
  void TearDown() override { remove_sandbox(sandbox, GetParam()); }
  TempDir work;
  std::string sandbox = work / "sandbox";
};

TEST_P(SandboxRun, CommandRunsAsRootInsideAndWritesIntoTheSandbox) {
  const RootMode mode = GetParam();
  unpack_for(test::sif_fixture("real/busybox_amd64.sif"), sandbox, mode);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  const std::string before = mountinfo();
  const auto etc_before = listing(sandbox + "/etc");
  ASSERT_EQ(::mkdir((work / "data").c_str(), 0777), 0);
  ::chmod((work / "data").c_str(), 0777);  // the emulated root is the caller; subid root too

  SandboxCommand command;
  command.rootfs = sandbox;
  command.mode = mode;
  command.env = kEnv;
  command.binds = {bind_of(work / "data", "/data")};
  command.cwd = "/etc";
  command.argv = {"/bin/sh", "-c",
                  "id -u > /uid-inside; pwd > /cwd-inside; touch /made-inside; "
                  "chown 1:1 /made-inside && echo chown-ok > /chown-result; "
                  "echo via-bind > /data/from-sandbox; test -s /etc/hosts && echo hosts-ok > /hosts-result; "
                  "exit 7"};
  EXPECT_EQ(run_in_sandbox(command), 7);

  EXPECT_EQ(test::read_file(sandbox + "/uid-inside"), "0\n");
  EXPECT_EQ(test::read_file(sandbox + "/cwd-inside"), "/etc\n");
  EXPECT_EQ(test::read_file(sandbox + "/chown-result"), "chown-ok\n");
  EXPECT_EQ(test::read_file(sandbox + "/hosts-result"), "hosts-ok\n");
  EXPECT_EQ(test::read_file(work / "data/from-sandbox"), "via-bind\n");
  struct stat st {};
  ASSERT_EQ(::lstat((sandbox + "/made-inside").c_str(), &st), 0);
  if (mode == RootMode::real_root) {
    EXPECT_EQ(st.st_uid, 1u) << "root's chown is real";
  }
  if (mode == RootMode::fakeroot_emulated) {
    EXPECT_EQ(st.st_uid, ::getuid()) << "emulated chown changes nothing";
  }
  if (mode == RootMode::fakeroot_subid) {
    EXPECT_EQ(st.st_uid, caller_subid_range("/etc/subuid")->start) << "uid 1 inside is the range's first id";
    EXPECT_EQ(st.st_gid, caller_subid_range("/etc/subgid")->start);
  }
  EXPECT_EQ(mountinfo(), before) << "nothing stays mounted";
  EXPECT_FALSE(std::filesystem::exists(sandbox + "/data")) << "the bind point made for the run is gone";
  EXPECT_EQ(listing(sandbox + "/etc"), etc_before) << "mount targets made for the run are removed";
}

TEST_P(SandboxRun, ExitStatusAndSignalsComeBack) {
  const RootMode mode = GetParam();
  unpack_for(test::sif_fixture("real/busybox_amd64.sif"), sandbox, mode);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  SandboxCommand command;
  command.rootfs = sandbox;
  command.mode = mode;
  command.env = kEnv;
  command.argv = {"/bin/sh", "-e", "-c", "true; false; echo not-reached > /reached"};
  EXPECT_EQ(run_in_sandbox(command), 1);
  EXPECT_FALSE(std::filesystem::exists(sandbox + "/reached"));
  command.argv = {"/bin/sh", "-c", "kill -TERM $$"};
  EXPECT_EQ(run_in_sandbox(command), 128 + 15);
  command.argv = {"true"};  // found through the command's PATH
  EXPECT_EQ(run_in_sandbox(command), 0);
  command.binds = {bind_of("/tmp", "relative/destination")};
  EXPECT_THROW(run_in_sandbox(command), Error);
  command.binds = {bind_of("/no/such/host/path", "/data")};
  try {
    run_in_sandbox(command);
    ADD_FAILURE() << "a missing bind source is an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist on the host"), std::string::npos) << e.what();
  }
  command.binds.clear();
  command.argv = {"/no/such/program"};
  try {
    run_in_sandbox(command);
    ADD_FAILURE() << "a missing program is an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/program"), std::string::npos) << e.what();
  }
}

TEST_P(SandboxRun, CtrlCReachesTheCommandAndUnwindsTheCaller) {
  const RootMode mode = GetParam();
  unpack_for(test::sif_fixture("real/busybox_amd64.sif"), sandbox, mode);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  // In a child process: the interrupt handlers set a flag that stays set.
  std::fflush(nullptr);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_interrupt_handlers();
    SandboxCommand command;
    command.rootfs = sandbox;
    command.mode = mode;
    command.env = kEnv;
    // As a terminal's Ctrl-C does: capsa (the command's parent) and the command both get SIGINT.
    command.argv = {"/bin/sh", "-c", "kill -INT $PPID; kill -INT $$; sleep 5; echo not-reached > /reached"};
    try {
      run_in_sandbox(command);
    } catch (const Interrupted& e) {
      ::_exit(e.signal_number() == SIGINT ? 0 : 2);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_FALSE(std::filesystem::exists(sandbox + "/reached"));
}

TEST_P(SandboxRun, NvBindsTheDriverForTheRunOnly) {
  const RootMode mode = GetParam();
  if (!std::filesystem::exists(test::fake_nvidia("lib"))) GTEST_SKIP() << "no fake-nvidia fixture";
  unpack_for(test::sif_fixture("real/busybox_amd64.sif"), sandbox, mode);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  const auto libs_before = listing(sandbox + "/.singularity.d/libs");
  const bool had_usr_bin = std::filesystem::exists(sandbox + "/usr/bin");
  // The plan binds the fake nvidia-smi onto /usr/bin/nvidia-smi, which busybox lacks: the
  // mount point made for it must go with the run.
  const std::string smi = sandbox + "/usr/bin/nvidia-smi";
  ASSERT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(smi)));
  // The fake driver as the host's (tests/gpu/fake_driver.hpp): its ld.so cache, its tools on PATH.
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("CAPSA_LDSO_CACHE", test::fake_cache().c_str(), 1);
  ::setenv("PATH", (test::fake_nvidia("bin") + ":" + old_path).c_str(), 1);
  SandboxCommand command;
  command.rootfs = sandbox;
  command.mode = mode;
  command.env = kEnv;
  command.nv = true;
  command.argv = {"/bin/sh", "-c", "ls /.singularity.d/libs | grep -e cuda -e nvidia > /libs-inside; "
                                   "test -x /usr/bin/nvidia-smi && echo smi-ok >> /libs-inside"};
  int status = run_in_sandbox(command);
  ::setenv("PATH", old_path.c_str(), 1);
  ::unsetenv("CAPSA_LDSO_CACHE");
  EXPECT_EQ(status, 0);
  EXPECT_EQ(test::read_file(sandbox + "/libs-inside"),
            "libcuda.so.1\nlibnvidia-ml.so.1\nlibnvidia-ptxjitcompiler.so.1\nsmi-ok\n");
  EXPECT_EQ(listing(sandbox + "/.singularity.d/libs"), libs_before) << "no driver file stays in the image";
  EXPECT_EQ(std::filesystem::exists(sandbox + "/usr/bin"), had_usr_bin);
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(smi))) << "no nvidia-smi mount point stays";
}

TEST_P(SandboxRun, RocmBindsTheDriverForTheRunOnly) {
  const RootMode mode = GetParam();
  if (!std::filesystem::exists(test::fake_rocm("lib"))) GTEST_SKIP() << "no fake-rocm fixture";
  unpack_for(test::sif_fixture("real/busybox_amd64.sif"), sandbox, mode);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  const auto libs_before = listing(sandbox + "/.singularity.d/libs");
  const std::string smi = sandbox + "/usr/bin/rocm-smi";
  ASSERT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(smi)));
  // The fake ROCm driver as the host's (tests/gpu/fake_driver.hpp): its ld.so cache, its tools on PATH.
  const std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("CAPSA_LDSO_CACHE", test::fake_rocm_cache().c_str(), 1);
  ::setenv("PATH", (test::fake_rocm("bin") + ":" + old_path).c_str(), 1);
  SandboxCommand command;
  command.rootfs = sandbox;
  command.mode = mode;
  command.env = kEnv;
  command.rocm = true;
  command.argv = {"/bin/sh", "-c",
                  "ls /.singularity.d/libs | grep -e amdocl -e rocr > /libs-inside; "
                  "test -x /usr/bin/rocm-smi && echo smi-ok >> /libs-inside"};
  int status = run_in_sandbox(command);
  ::setenv("PATH", old_path.c_str(), 1);
  ::unsetenv("CAPSA_LDSO_CACHE");
  EXPECT_EQ(status, 0);
  EXPECT_EQ(test::read_file(sandbox + "/libs-inside"), "libamdocl64.so\nlibrocr_debug_agent64.so.2\nsmi-ok\n");
  EXPECT_EQ(listing(sandbox + "/.singularity.d/libs"), libs_before) << "no driver file stays in the image";
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(smi))) << "no rocm-smi mount point stays";
}

// The slow one: apt-get update and install from the mirror inside the Debian test image.
class AptInSandbox : public SandboxRun {
 protected:
  static void SetUpTestSuite() {
    images = new TempDir();
    std::string sif = *images / "debian.sif";
    auto pulled = run_process({"env", "CAPSA_CACHEDIR=" + (*images / "cache"), test::capsa_binary(), "pull", "--nohttps",
                               sif, "docker://" + test::test_registry().plain + "/public/debian:bookworm"},
                              "", 600);
    if (pulled.exit_code == 0) debian_sif = sif;
    else std::cerr << "pulling the Debian image failed: " << pulled.err;
  }
  static void TearDownTestSuite() {
    delete images;
    images = nullptr;
  }
  static inline TempDir* images = nullptr;
  static inline std::string debian_sif;
};

TEST_P(AptInSandbox, AptGetInstallWorks) {
  const RootMode mode = GetParam();
  ASSERT_FALSE(debian_sif.empty()) << "no Debian image";
  unpack_for(debian_sif, sandbox, mode);
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  SandboxCommand command;
  command.rootfs = sandbox;
  command.mode = mode;
  command.env = kEnv;
  // The host's apt sources, as a build with -B would see them (the name resolves through
  // the host's /etc/hosts, which every sandbox run sees).
  if (std::filesystem::exists("/etc/apt/sources.list.d"))
    command.binds.push_back(bind_of("/etc/apt/sources.list.d", "/etc/apt/sources.list.d", true));
  command.argv = {"/bin/sh", "-e", "-c",
                  "apt-get -q update > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }\n"
                  "apt-get -q install -y --no-install-recommends hello > /tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 2; }\n"
                  "hello > /hello-output\n"};
  EXPECT_EQ(run_in_sandbox(command), 0);
  EXPECT_EQ(test::read_file(sandbox + "/hello-output"), "Hello, world!\n");
  struct stat st {};
  ASSERT_EQ(::lstat((sandbox + "/usr/bin/hello").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_NE(test::read_file(sandbox + "/var/lib/dpkg/status").find("Package: hello\n"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(sandbox + "/tmp/apt.log")) << "/tmp was a scratch tmpfs";

  // Packed as the build would: owners as the build made them. apt-get update chowns its
  // download directory to _apt (uid 42 in Debian): real with real root and subordinate
  // ids, pretended under emulation, where every file is recorded as root.
  UniqueFd out = open_file(work / "packed.squashfs", O_RDWR | O_CREAT | O_TRUNC, 0644);
  std::uint64_t bytes = pack_sandbox(sandbox, out.get(), 0, mode);
  EXPECT_EQ(bytes, file_size(out.get()));
  auto owners = owners_in_image(work / "packed.squashfs");
  EXPECT_EQ(owners.at("/usr/bin/hello"), std::make_pair(0u, 0u));
  EXPECT_EQ(owners.at("/"), std::make_pair(0u, 0u));
  const std::uint32_t apt_uid = mode == RootMode::fakeroot_emulated ? 0 : 42;
  EXPECT_EQ(owners.at("/var/lib/apt/lists/partial").first, apt_uid);
}

INSTANTIATE_TEST_SUITE_P(Modes, SandboxRun, ::testing::ValuesIn(modes_here()),
                         [](const auto& param_info) { return mode_label(param_info.param); });
INSTANTIATE_TEST_SUITE_P(Modes, AptInSandbox, ::testing::ValuesIn(modes_here()),
                         [](const auto& param_info) { return mode_label(param_info.param); });

TEST(RootModes, RealRootNeedsRootAndAutoPicksAFakerootMode) {
  if (::geteuid() == 0) {
    EXPECT_EQ(resolve_root_mode(RootMode::real_root), RootMode::real_root);
  } else {
    EXPECT_THROW(resolve_root_mode(RootMode::real_root), Error);
  }
  RootMode resolved = resolve_root_mode(RootMode::fakeroot_auto);
  EXPECT_TRUE(resolved == RootMode::fakeroot_subid || resolved == RootMode::fakeroot_emulated);
  bool ranges = caller_subid_range("/etc/subuid") && caller_subid_range("/etc/subgid");
  EXPECT_EQ(resolved == RootMode::fakeroot_subid, ranges && ::access("/usr/bin/newuidmap", X_OK) == 0);
}

TEST(RootModes, UserNamespaceBodyResultsAndErrorsComeBack) {
  for (RootMode mode : modes_here()) {
    SCOPED_TRACE(mode_label(mode));
    EXPECT_EQ(run_in_user_namespace(mode, [] { return ::geteuid() == 0 ? 42 : 1; }), 42);
    try {
      run_in_user_namespace(mode, []() -> int { throw Error("from the child"); });
      ADD_FAILURE() << "the child's error is rethrown";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "from the child");
    }
  }
}

}  // namespace
}  // namespace capsa::runtime
