// What an unprivileged user can gain through capsa: nothing they do not have outside.
// Every check runs as the unprivileged test user (capsa-test): in `privilege.user`
// directly, in `privilege.root` in a child that dropped to that user after root prepared
// what only root can make (a setuid-root program, a root-only device node, root's cache).
// Each check first shows the thing is refused *outside* the container, so that a refusal
// inside proves capsa added nothing, and the check could fail.
// Secrets: the API key of the token registry ($oauthtoken, as NGC) and the Basic
// credentials of the fault proxy never appear in output, errors, process titles,
// children's environments or cache files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "registry/testbed.hpp"
#include "support/background.hpp"
#include "support/leaks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"
#include "support/unprivileged.hpp"

namespace capsa::privilege {
namespace {

namespace fs = std::filesystem;
using test::ProcessResult;
using test::run_process;

std::string busybox() { return test::sif_fixture("real/busybox_amd64.sif"); }

using Checks = test::ChildChecks;

// Runs `body` as the unprivileged test user. A missing test user fails the test: a skip
// here would only leave this helper, and the test would pass having checked nothing
// (scripts/test.sh always creates the user).
void as_test_user(const std::function<bool(Checks&)>& body) {
  if (::geteuid() == 0 && !test::test_user())
    FAIL() << "no unprivileged test user " << (std::getenv("CAPSA_TEST_USER") ? std::getenv("CAPSA_TEST_USER") : "capsa-test")
           << " (create it with scripts/create-test-user.sh)";
  int status = test::run_as_test_user([&] {
    Checks checks;
    return body(checks) && checks.report();
  });
  EXPECT_EQ(status, 0) << "see the lines above";
}

// A directory the test user may enter (and, with `writable_by_user`, own).
class SharedDir {
 public:
  explicit SharedDir(bool writable_by_user = false) {
    ::chmod(dir_.path().c_str(), 0755);
    if (writable_by_user && ::geteuid() == 0) {
      auto user = test::test_user();
      if (user) ::chown(dir_.path().c_str(), user->uid, user->gid);
    }
  }
  const std::string& path() const { return dir_.path(); }
  std::string operator/(const std::string& name) const { return dir_ / name; }

 private:
  test::TempDir dir_;
};

ProcessResult capsa(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {"env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(test::capsa_binary());
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, "", 120);
}

ProcessResult host_sh(const std::string& script) { return run_process({"sh", "-c", script}, "", 30); }

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

// Whether a "PID: command line" entry of the leak probes is `root` or one of its
// descendants: the secret scans look at the test's own process tree only, since other
// suites running at the same time use the same API key on purpose.
pid_t pid_of(const std::string& entry) { return static_cast<pid_t>(std::atol(entry.c_str())); }

// The parent of `pid`, or 0 once it is gone.
pid_t parent_of(pid_t pid) {
  std::string stat;
  try {
    stat = test::read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (...) {
    return 0;
  }
  // Field 4, after the command name in parentheses (which may hold spaces).
  std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  int ppid = 0;
  if (std::sscanf(stat.c_str() + close + 1, " %*c %d", &ppid) != 1) return 0;
  return ppid;
}

bool in_tree_of(pid_t root, const std::string& entry) {
  pid_t pid = pid_of(entry);
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    if (pid == root) return true;
    pid = parent_of(pid);
  }
  return false;
}

// --- files -----------------------------------------------------------------------------

// /etc/hostname (root, 0644) and /etc (root, 0755), bound in read-write: the user writes
// neither, with or without --writable-tmpfs; the host files are unchanged.
TEST(Privilege, HostFilesTheUserCannotWriteStayUnwritableInside) {
  if (!fs::exists("/etc/hostname")) GTEST_SKIP() << "no /etc/hostname on this host";
  const std::string before = test::read_file("/etc/hostname");
  as_test_user([&](Checks& check) {
    check.expect(host_sh("echo x >> /etc/hostname").exit_code != 0, "the host refuses the write outside");
    const std::string probe =
        "echo x >> /mnt/hostname && echo WROTE-FILE; "
        "touch /mnt/etc/capsa-probe && echo CREATED; "
        "rm -f /mnt/etc/hostname && echo REMOVED; "
        "mv /mnt/etc/hostname /mnt/etc/moved && echo RENAMED; "
        "echo x > /proc/sys/kernel/domainname && echo SYSCTL; "
        "echo done";
    for (const char* extra : {"--containall", "--writable-tmpfs"}) {
      auto result = capsa({"exec", extra, "-B", "/etc/hostname:/mnt/hostname:rw", "-B", "/etc:/mnt/etc:rw", busybox(),
                           "sh", "-c", probe});
      check.expect(result.out == "done\n", std::string(extra) + ": nothing written: " + result.out + result.err);
      check.expect(contains(result.err, "Permission denied") || contains(result.err, "Read-only file system"),
                   std::string(extra) + ": refused by the kernel: " + result.err);
    }
    return true;
  });
  EXPECT_EQ(test::read_file("/etc/hostname"), before);
  EXPECT_FALSE(fs::exists("/etc/capsa-probe"));
}

// --- setuid ----------------------------------------------------------------------------

// A setuid-root program from the host, bound in: it runs with the caller's uid (the
// container's mounts are nosuid and the process has no_new_privs), although the same
// file makes the user root outside.
TEST(Privilege, ASetuidRootProgramBoundInNeverRaisesTheEffectiveUid) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can make a setuid-root program (privilege.root runs this as the test user)";
  SharedDir dir;
  const std::string program = dir / "print_ids";
  fs::copy_file(CAPSA_PRINT_IDS, program);
  ASSERT_EQ(::chown(program.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(program.c_str(), 04755), 0);
  const auto user = test::test_user();
  ASSERT_TRUE(user);
  const std::string mine = "ruid=" + std::to_string(user->uid) + " euid=" + std::to_string(user->uid) + "\n";
  as_test_user([&](Checks& check) {
    auto outside = run_process({program});
    if (!check.expect(outside.out == "ruid=" + std::to_string(user->uid) + " euid=0\n",
                      "outside, the setuid bit works on this file system: " + outside.out))
      return false;
    auto inside = capsa({"exec", "-B", dir.path() + ":/mnt/suid", busybox(), "/mnt/suid/print_ids"});
    check.expect(inside.out == mine, "inside, the effective uid stays the caller's: " + inside.out + inside.err);
    auto flags = capsa({"exec", "-B", dir.path() + ":/mnt/suid", busybox(), "sh", "-c",
                        "grep NoNewPrivs /proc/self/status; "
                        "awk '$5 == \"/\" || $5 == \"/mnt/suid\" { print $5, $6 }' /proc/self/mountinfo"});
    check.expect(contains(flags.out, "NoNewPrivs:\t1\n"), "no_new_privs is set: " + flags.out + flags.err);
    std::istringstream lines(flags.out);
    int mounts = 0;
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("/")) continue;
      ++mounts;
      check.expect(contains(line, "nosuid"), "mounted nosuid: " + line);
    }
    check.expect(mounts >= 2, "the root and the bind were listed: " + flags.out);
    return true;
  });
}

// --- devices ---------------------------------------------------------------------------

// Host device nodes only root may open (loop devices, /dev/loop-control, /dev/kvm) stay
// closed inside, and no new device node can be made there.
TEST(Privilege, DevicesTheUserCannotOpenOutsideStayClosedInside) {
  std::vector<std::string> devices;
  for (const char* path : {"/dev/loop-control", "/dev/loop0", "/dev/kvm", "/dev/mem", "/dev/console"}) {
    struct stat st {};
    if (::stat(path, &st) == 0 && (st.st_mode & 06) == 0) devices.push_back(path);
  }
  if (devices.empty()) GTEST_SKIP() << "no root-only device node on this host";
  as_test_user([&](Checks& check) {
    for (const auto& device : devices) {
      auto outside = host_sh("true < " + device);
      check.expect(outside.exit_code != 0, device + " cannot be opened outside");
      auto inside = capsa({"exec", busybox(), "sh", "-c", "true < " + device + " && echo OPENED; echo done"});
      check.expect(inside.out == "done\n" && contains(inside.err, "Permission denied"),
                   device + " cannot be opened inside: " + inside.out + inside.err);
    }
    auto made = capsa({"exec", "--writable-tmpfs", busybox(), "sh", "-c",
                       "mknod /tmp/mem c 1 1 && echo MADE; mknod /mem c 1 1 && echo MADE; echo done"});
    check.expect(made.out == "done\n", "no device node can be made: " + made.out + made.err);
    return true;
  });
}

// A root-owned 0600 device node in a directory bound in (here the numbers of /dev/null:
// what is checked is the permission, not the device).
TEST(Privilege, ARootOnlyDeviceNodeBoundInCannotBeOpened) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root can make a device node (privilege.root runs this as the test user)";
  SharedDir dir;
  const std::string node = dir / "rootonly";
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0600, makedev(1, 3)), 0);
  as_test_user([&](Checks& check) {
    check.expect(host_sh("true < " + node).exit_code != 0, "closed outside");
    check.expect(host_sh("true > " + node).exit_code != 0, "closed outside for writing");
    auto inside = capsa({"exec", "-B", dir.path() + ":/mnt/dev", busybox(), "sh", "-c",
                         "true < /mnt/dev/rootonly && echo READ; true > /mnt/dev/rootonly && echo WROTE; echo done"});
    check.expect(inside.out == "done\n", "closed inside: " + inside.out + inside.err);
    return true;
  });
}

// --- caches ----------------------------------------------------------------------------

class PrivilegeWithRegistry : public ::testing::Test {
 protected:
  const test::TestRegistry& registry = test::test_registry();
  std::string plain(const std::string& repo) const { return "docker://" + registry.plain + "/" + repo; }
};

// Each user's default cache is under their own home, mode 0700.
TEST_F(PrivilegeWithRegistry, TheDefaultCacheIsPrivateToItsUser) {
  SharedDir home(/*writable_by_user=*/true);
  as_test_user([&](Checks& check) {
    auto list = capsa({"cache", "list"}, {"HOME=" + home.path(), "CAPSA_CACHEDIR=", "APPTAINER_CACHEDIR=",
                                          "SINGULARITY_CACHEDIR="});
    check.expect(list.exit_code == 0, "cache list: " + list.err);
    struct stat st {};
    const std::string dir = home / ".capsa/cache";
    if (!check.expect(::stat(dir.c_str(), &st) == 0, dir + " was created")) return false;
    check.expect((st.st_mode & 07777) == 0700, "mode 0700");
    check.expect(st.st_uid == ::getuid(), "owned by the user");
    return true;
  });
}

// Root's cache (mode 0700, in a directory everyone may enter) is closed to the test
// user: listing, cleaning, pulling into it and running its SIFs all fail, and nothing in
// it changes.
TEST_F(PrivilegeWithRegistry, AnotherUsersCacheCanBeNeitherReadNorChanged) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs a cache of another user (privilege.root makes root's)";
  SharedDir parent;
  const std::string root_cache = parent / "cache";
  auto pulled = capsa({"pull", "--nohttps", parent / "root.sif", plain("public/busybox:1.0")},
                      {"CAPSA_CACHEDIR=" + root_cache});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  auto listing_before = capsa({"cache", "list", "-v"}, {"CAPSA_CACHEDIR=" + root_cache}).out;
  std::string cached_sif;
  for (const auto& entry : fs::directory_iterator(root_cache + "/sif"))
    if (entry.path().extension() == ".sif") cached_sif = entry.path().string();
  ASSERT_FALSE(cached_sif.empty());
  SharedDir user_dir(/*writable_by_user=*/true);

  as_test_user([&](Checks& check) {
    const std::vector<std::string> env = {"CAPSA_CACHEDIR=" + root_cache};
    auto list = capsa({"cache", "list"}, env);
    check.expect(list.exit_code != 0 && contains(list.err, "Permission denied"), "list refused: " + list.err);
    auto clean = capsa({"cache", "clean", "--force"}, env);
    check.expect(clean.exit_code != 0, "clean refused: " + clean.out + clean.err);
    auto pull = capsa({"pull", "--nohttps", user_dir / "mine.sif", plain("public/busybox:1.0")}, env);
    check.expect(pull.exit_code != 0 && !fs::exists(user_dir / "mine.sif"), "no pull through it: " + pull.err);
    auto run = capsa({"exec", cached_sif, "true"});
    check.expect(run.exit_code != 0 && contains(run.err, "Permission denied"), "its SIF cannot be run: " + run.err);
    check.expect(run_process({"cat", cached_sif}).exit_code != 0, "nor read");
    return true;
  });
  EXPECT_EQ(capsa({"cache", "list", "-v"}, {"CAPSA_CACHEDIR=" + root_cache}).out, listing_before)
      << "root's cache is unchanged";
}

// A shared cache directory: one that every user may write is refused (anyone could put
// an image there under the name of another); a group-shared one is used, and its entries
// are never writable by others, whatever the umask.
TEST_F(PrivilegeWithRegistry, AWorldWritableCacheIsRefusedAndEntriesAreNeverWritableByOthers) {
  SharedDir base(/*writable_by_user=*/true);
  as_test_user([&](Checks& check) {
    const std::string open_dir = base / "open";
    fs::create_directory(open_dir);
    ::chmod(open_dir.c_str(), 0777);
    auto refused = capsa({"cache", "list"}, {"CAPSA_CACHEDIR=" + open_dir});
    check.expect(refused.exit_code == 1 && contains(refused.err, "writable by every user"),
                 "a world-writable cache is refused: " + refused.err);
    check.expect(!fs::exists(open_dir + "/blobs"), "and left untouched");

    const std::string group_dir = base / "group";
    fs::create_directory(group_dir);
    ::chmod(group_dir.c_str(), 02770);
    ::umask(0);
    auto pulled = capsa({"pull", "--nohttps", base / "group.sif", plain("public/busybox:1.0")},
                        {"CAPSA_CACHEDIR=" + group_dir});
    check.expect(pulled.exit_code == 0, "a group-shared cache is used: " + pulled.err);
    for (auto it = fs::recursive_directory_iterator(group_dir); it != fs::recursive_directory_iterator(); ++it) {
      struct stat st {};
      ::lstat(it->path().c_str(), &st);
      if (S_ISREG(st.st_mode) && !it->path().string().ends_with(".lock"))
        check.expect((st.st_mode & 022) == 0, it->path().string() + " is writable by others");
    }
    return true;
  });
}

// --- secrets ---------------------------------------------------------------------------

std::string base64(const std::string& in) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned n = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
    for (int shift : {18, 12, 6, 0}) out += table[(n >> shift) & 63];
  }
  if (i < in.size()) {
    unsigned n = (unsigned char)in[i] << 16 | (i + 1 < in.size() ? (unsigned char)in[i + 1] << 8 : 0);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += i + 1 < in.size() ? table[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Every form in which a secret could leak: the key, the Basic header value, and the
// header of the registry's tokens (the same for every token it signs).
std::vector<std::string> secret_forms(const std::string& user, const std::string& password) {
  return {password, base64(user + ":" + password)};
}

// Files under `dir` that contain one of `needles`.
std::vector<std::string> files_containing(const std::string& dir, const std::vector<std::string>& needles) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    std::string content = test::read_file(it->path().string());
    for (const auto& needle : needles)
      if (contains(content, needle)) found.push_back(it->path().string());
  }
  return found;
}

// The JWT header segment of the token service's tokens, fetched here with the key.
std::string token_header(const test::TestRegistry& reg) {
  std::string config = "user = \"$oauthtoken:" + reg.api_key + "\"\n";
  auto got = run_process({"curl", "-s", "-K", "-", "--cacert", reg.ca_file,
                          reg.auth_realm + "?service=" + reg.service + "&scope=repository:private/busybox:pull"},
                         config, 30);
  auto at = got.out.find("\"token\"");
  if (at == std::string::npos) return "";
  auto start = got.out.find('"', got.out.find(':', at)) + 1;
  return got.out.substr(start, got.out.find('.', start) - start);
}

// NGC's convention against the token registry: the key in the environment, a pull that
// works and one with a wrong key. Neither output nor error, nor any file of the cache or
// of the output, holds the key, the Basic value or a token.
TEST_F(PrivilegeWithRegistry, SecretsAppearInNoOutputErrorOrCacheFile) {
  test::TempDir work;
  const std::string cache = work / "cache";
  const std::string header = token_header(registry);
  ASSERT_GT(header.size(), 20u) << "could not fetch a token to know its header";
  std::vector<std::string> secrets = secret_forms("$oauthtoken", registry.api_key);
  secrets.push_back(header);
  const std::vector<std::string> env = {"CAPSA_CACHEDIR=" + cache, "CAPSA_REGISTRY_CA=" + registry.ca_file,
                                        "APPTAINER_DOCKER_USERNAME=$oauthtoken"};
  const std::string image = "docker://" + registry.token + "/private/busybox:1.0";
  auto with = [&](const std::string& password) {
    auto all = env;
    all.push_back("APPTAINER_DOCKER_PASSWORD=" + password);
    return all;
  };
  auto ok = capsa({"pull", work / "ok.sif", image}, with(registry.api_key));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  auto wrong = capsa({"pull", work / "wrong.sif", image}, with("x" + registry.api_key));
  EXPECT_EQ(wrong.exit_code, 1);
  auto run = capsa({"exec", image, "sh", "-c", "env; cat /proc/self/cmdline"}, with(registry.api_key));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  for (const auto& secret : secrets) {
    for (const auto* result : {&ok, &wrong, &run}) {
      EXPECT_FALSE(contains(result->out, secret)) << "output holds a secret";
      EXPECT_FALSE(contains(result->err, secret)) << "an error or log line holds a secret: " << result->err;
    }
  }
  EXPECT_EQ(test::joined(files_containing(work.path(), secrets)), "") << "files holding a secret";
}

// A slow pull through the fault proxy, which demands Basic credentials (the API key as
// password) and sends the blob slowly: while it runs, no process's command line holds
// the key; with the credentials in a Docker config file no environment does either; and
// the processes capsa starts to run the container (the FUSE server, the container) do
// not inherit a password given in the environment.
TEST_F(PrivilegeWithRegistry, SecretsAppearInNoProcessTitleOrChildEnvironmentDuringASlowPull) {
  test::FaultProxy proxy(registry.plain);
  const std::string user = "$oauthtoken";
  proxy.configure({{"basic", {{"user", user}, {"password", registry.api_key}}},
                   {"throttle", {{"bytes_per_second", 256 << 10}}}});
  const std::vector<std::string> secrets = secret_forms(user, registry.api_key);
  for (const bool in_environment : {false, true}) {
    SCOPED_TRACE(in_environment ? "password in the environment" : "password in a Docker config file");
    test::TempDir work;
    fs::create_directories(work / "docker");
    fs::create_directories(work / "shared");
    fs::create_directories(work / "session");
    std::ofstream(work / "docker/config.json")
        << "{\"auths\": {\"" << proxy.front() << "\": {\"auth\": \"" << base64(user + ":" + registry.api_key) << "\"}}}";
    const std::string marker = "CAPSA_SECRET_TEST_MARK=" + work.path();
    std::vector<std::string> argv = {"env", marker, "CAPSA_CACHEDIR=" + (work / "cache"), "APPTAINER_NOHTTPS=1",
                                     "CAPSA_SESSION_DIR=" + (work / "session")};
    if (in_environment) {
      argv.push_back("APPTAINER_DOCKER_USERNAME=" + user);
      argv.push_back("APPTAINER_DOCKER_PASSWORD=" + registry.api_key);
    } else {
      argv.push_back("DOCKER_CONFIG=" + (work / "docker"));
    }
    for (const std::string& arg : {test::capsa_binary(), std::string("exec"), std::string("-B"), work / "shared" + ":/w",
                                   "docker://" + proxy.front() + "/public/busybox:1.0", std::string("sh"),
                                   std::string("-c"), std::string("touch /w/ready; exec sleep 300")})
      argv.push_back(arg);
    test::Background container(argv, work / "exec.err");
    std::set<std::string> seen_processes;
    std::vector<std::string> leaks;
    bool ready = test::eventually([&] {
      for (const auto& process : test::processes_with_environment(marker)) seen_processes.insert(process);
      for (const auto& secret : secrets) {
        for (const auto& process : test::processes_with_argument(secret)) {
          // The test's own env(1) launcher carries the password on its command line
          // until it execs capsa: the user's doing, not capsa's.
          if (!in_tree_of(container.pid(), process) || contains(process, ": env " + marker + " ")) continue;
          leaks.push_back("command line: " + process);
        }
        for (const auto& process : test::processes_with_environment(secret)) {
          if (!in_tree_of(container.pid(), process)) continue;
          // A password the user put in capsa's environment is in capsa's own block from
          // exec until main() hides it (util/environment_block.hpp), a window the scan may
          // hit: capsa itself is excused by pid. Its children never are: a child forked
          // without exec (the pulling fork, the container's set-up) shows the block as it
          // was at the fork.
          const bool capsa_itself = in_environment && pid_of(process) == container.pid();
          if (!capsa_itself) leaks.push_back("environment: " + process);
        }
      }
      return fs::exists(work / "shared/ready") || container.finished();
    }, 120) && fs::exists(work / "shared/ready");
    ASSERT_TRUE(ready) << test::read_file(work / "exec.err");
    EXPECT_GE(seen_processes.size(), 2u) << "the scan saw the pull and the container";
    // With the container running, the pull is over and capsa has become the container:
    // no process of the tree is excused now, the FUSE server (forked without exec, when
    // unprivileged, so it keeps capsa's command line; its inherited environment is wiped)
    // included. It is no child of the container (util/detached_child.hpp): it is found by
    // this run's image reference, which only this test's processes carry. The scan must
    // see it, or it proves nothing.
    const std::string reference = "docker://" + proxy.front();
    auto of_this_run = [&](const std::string& process) {
      return in_tree_of(container.pid(), process) || contains(process, reference);
    };
    std::vector<std::string> helpers;
    for (const auto& process : test::processes_with_argument(reference))
      if (pid_of(process) != container.pid()) helpers.push_back(process);
    if (::geteuid() != 0) {
      EXPECT_FALSE(helpers.empty()) << "the scan saw no FUSE server";
    }
    for (const auto& secret : secrets)
      for (const auto& process : test::processes_with_environment(secret))
        if (of_this_run(process)) leaks.push_back("environment, container running: " + process);
    EXPECT_EQ(test::joined(leaks), "");
    // (work/docker holds the config file the user wrote: not capsa's.)
    EXPECT_EQ(test::joined(files_containing(work / "cache", secrets)), "") << "cache files holding a secret";
    container.signal(SIGKILL);
    container.wait();
    auto err = test::read_file(work / "exec.err");
    for (const auto& secret : secrets) EXPECT_FALSE(contains(err, secret)) << err;
  }
}

}  // namespace
}  // namespace capsa::privilege
