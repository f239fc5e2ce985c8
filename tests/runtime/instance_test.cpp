// `capsa instance start|run|list|stop|stats` and `exec|run|shell|test instance://NAME`,
// as root and as the unprivileged test user: the instance stays alive after the command
// that started it, a join sees its mounts (a private /tmp with --contain) and processes,
// and stopping leaves nothing running or mounted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "runtime/instance_support.hpp"
#include "runtime/run_support.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::instance_testing {
namespace {

using nlohmann::json;

int line_count(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

json listed(const std::string& pattern) {
  auto result = capsa({"instance", "list", "--json", pattern});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return json::parse(result.out)["instances"];
}

// Nothing of the instances of `image` is left: no process, no loop device.
void expect_nothing_left(const std::string& image) {
  for (int i = 0; i < 50 && (processes_naming(image) > 0 || runtime::testing::loop_devices_for(image) > 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(processes_naming(image), 0) << "no process of the instance is left";
  EXPECT_EQ(runtime::testing::loop_devices_for(image), 0) << "no loop device is left";
}

TEST(Instance, StartsListsJoinsAndStops) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  const std::string name = unique_name("basic");
  StopOnExit guard(name);
  auto started = capsa({"instance", "start", "--contain", "--pid-file", dir / "pid", image, name, "first", "second"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_NE(started.err.find("instance started successfully"), std::string::npos) << started.err;

  json list = listed(name);
  ASSERT_EQ(list.size(), 1u) << list.dump();
  EXPECT_EQ(list[0]["instance"], name);
  EXPECT_EQ(list[0]["img"], image);
  const int pid = list[0]["pid"].get<int>();
  EXPECT_TRUE(process_alive(pid)) << "the init stays after `instance start` returned";
  auto table = capsa({"instance", "list", name});
  EXPECT_EQ(table.out, "INSTANCE NAME" + std::string(name.size() > 13 ? name.size() - 13 + 4 : 4, ' ') + "PID" +
                           std::string(std::max<std::size_t>(3, std::to_string(pid).size()) - 3 + 4, ' ') +
                           "IP    IMAGE\n" + name +
                           std::string(std::max<std::size_t>(13, name.size()) - name.size() + 4, ' ') +
                           std::to_string(pid) + "          " + image + "\n")
      << table.out;

  EXPECT_EQ(test::read_file(dir / "pid"), std::to_string(pid) + "\n") << "--pid-file";

  // The start script's private /tmp (--contain), its arguments, and its processes.
  test::ProcessResult seen;
  for (int i = 0; i < 50; ++i) {
    seen = capsa({"exec", "instance://" + name, "cat", "/tmp/started"});
    if (seen.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(seen.exit_code, 0) << seen.err;
  EXPECT_EQ(seen.out, "started first second\n");
  EXPECT_FALSE(std::filesystem::exists("/tmp/started") && test::read_file("/tmp/started") == seen.out)
      << "the file is in the instance's /tmp, not the host's";
  auto ps = capsa({"exec", "instance://" + name, "ps", "-o", "pid,args"});
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_NE(ps.out.find("sleep 1000"), std::string::npos) << "the join sees the instance's processes:\n" << ps.out;
  EXPECT_NE(ps.out.find("    1 "), std::string::npos) << "and its PID namespace:\n" << ps.out;
  EXPECT_EQ(capsa({"exec", "instance://" + name, "true"}).exit_code, 0);
  EXPECT_EQ(capsa({"exec", "instance://" + name, "cat", "/tmp/instance-name"}).out, name + "\n")
      << "the start script sees APPTAINER_INSTANCE";
  EXPECT_EQ(capsa({"exec", "instance://" + name, "sh", "-c", "echo $SINGULARITY_INSTANCE"}).out, name + "\n");
  EXPECT_EQ(capsa({"exec", "instance://" + name, "sh", "-c", "exit 7"}).exit_code, 7) << "the command's status";
  auto shell = runtime::testing::capsa({"shell", "instance://" + name}, {}, "cat /tmp/started; exit 3\n");
  EXPECT_EQ(shell.exit_code, 3) << shell.err;
  EXPECT_NE(shell.out.find("started first"), std::string::npos) << shell.out;
  auto run = capsa({"run", "instance://" + name, "joined"});  // the runscript, in the instance
  auto ran = capsa({"exec", "instance://" + name, "cat", "/tmp/ran"});
  EXPECT_EQ(ran.out, "ran joined\n") << run.err << ran.err;

  // The logs, where `list --logs` says.
  auto logs = capsa({"instance", "list", "--logs", name});
  EXPECT_NE(logs.out.find(log_directory() + "/" + name + ".err"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find(log_directory() + "/" + name + ".out"), std::string::npos) << logs.out;
  EXPECT_EQ(test::read_file(log_directory() + "/" + name + ".out"), "to-stdout\n");
  EXPECT_TRUE(test::read_file(log_directory() + "/" + name + ".err").ends_with("to-stderr\n"));
  struct stat st {};
  ASSERT_EQ(::stat((record_directory() + "/" + name + ".json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the record is the user's alone";
  ASSERT_EQ(::stat(record_directory().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto stopped = capsa({"instance", "stop", name});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_NE(stopped.err.find("Stopping " + name + " instance of " + image), std::string::npos) << stopped.err;
  EXPECT_FALSE(process_alive(pid));
  EXPECT_TRUE(listed(name).empty());
  EXPECT_FALSE(std::filesystem::exists(record_directory() + "/" + name + ".json"));
  expect_nothing_left(image);
}

TEST(Instance, RunStartsTheRunscriptAndTestAndRunJoin) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  const std::string name = unique_name("run");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "run", "--contain", image, name, "serve"}).exit_code, 0);
  test::ProcessResult ran;
  for (int i = 0; i < 50; ++i) {
    ran = capsa({"exec", "instance://" + name, "cat", "/tmp/ran"});
    if (ran.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(ran.out, "ran serve\n") << ran.err;
  EXPECT_FALSE(capsa({"exec", "instance://" + name, "test", "-e", "/tmp/started"}).exit_code == 0)
      << "instance run does not run the start script";
  EXPECT_EQ(capsa({"test", "instance://" + name}).exit_code, 0) << "no test script: passes";
  EXPECT_EQ(capsa({"instance", "stop", name}).exit_code, 0);
  expect_nothing_left(image);
}

TEST(Instance, AnImageWithoutAStartScriptStaysUpUntilStopped) {
  const std::string name = unique_name("plain");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "start", runtime::testing::busybox_sif(), name}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  json list = listed(name);
  ASSERT_EQ(list.size(), 1u);
  auto ps = capsa({"exec", "instance://" + name, "ps", "-o", "pid,args"});
  EXPECT_EQ(line_count(ps.out), 3) << "a header, the init and ps:\n" << ps.out;
  EXPECT_EQ(capsa({"instance", "stop", name}).exit_code, 0);
}

TEST(Instance, AJoinIsInEveryNamespaceOfTheInstance) {
  const std::string name = unique_name("namespaces");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "start", "--ipc", "--hostname", "inst-host", "--net", "--network", "none",
                   runtime::testing::busybox_sif(), name})
                .exit_code,
            0);
  const int pid = listed(name)[0]["pid"].get<int>();
  for (const std::string ns : {"mnt", "pid", "ipc", "uts", "net", "user"}) {
    const std::string theirs = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/" + ns).string();
    auto joined = capsa({"exec", "instance://" + name, "readlink", "/proc/self/ns/" + ns});
    EXPECT_EQ(joined.out, theirs + "\n") << ns << ": " << joined.err;
  }
  EXPECT_EQ(capsa({"exec", "instance://" + name, "hostname"}).out, "inst-host\n");
  auto devices = capsa({"exec", "instance://" + name, "cat", "/proc/net/dev"});
  EXPECT_EQ(line_count(devices.out), 3) << "two header lines and the loopback:\n" << devices.out;
  EXPECT_EQ(capsa({"instance", "stop", name}).exit_code, 0);
}

TEST(Instance, AFakerootInstanceIsJoinedAsRoot) {
  const std::string name = unique_name("fakeroot");
  StopOnExit guard(name);
  auto started = capsa({"instance", "start", "--fakeroot", runtime::testing::busybox_sif(), name});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  auto id = capsa({"exec", "instance://" + name, "id", "-u"});
  EXPECT_EQ(id.out, "0\n") << id.err;
  EXPECT_EQ(capsa({"instance", "stop", name}).exit_code, 0);
}

TEST(Instance, TheInstanceHoldsNoneOfTheCallersDescriptors) {
  // A pipe the caller left open on fd 3: `cat` sees its end only if the instance, which
  // lives on, did not keep a copy.
  const std::string name = unique_name("fds");
  StopOnExit guard(name);
  auto piped =
      test::run_process({"sh", "-c", "(\"$0\" instance start \"$1\" \"$2\" 3>&1 >/dev/null 2>&1; echo done) | cat",
                         test::capsa_binary(), runtime::testing::busybox_sif(), name},
                        "", 30);
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "done\n");
  EXPECT_EQ(listed(name).size(), 1u);
  EXPECT_EQ(capsa({"instance", "stop", name}).exit_code, 0);
}

TEST(Instance, StopSignalTimeoutForceAndAll) {
  test::TempDir dir;
  // A start script that ignores SIGTERM: stop waits --timeout, then kills.
  const std::string image = runtime::testing::make_image(
      dir, "stubborn",
      {{"/.singularity.d/startscript", "#!/bin/sh\ntrap '' INT TERM\nwhile :; do sleep 1; done\n", 0755}});
  const std::string a = unique_name("stop"), b = unique_name("stop"), prefix = a.substr(0, a.rfind('-'));
  StopOnExit guard(prefix + "-*");
  ASSERT_EQ(capsa({"instance", "start", image, a}).exit_code, 0);
  ASSERT_EQ(capsa({"instance", "start", image, b}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  auto timed = capsa({"instance", "stop", "--timeout", "1", a});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(timed.exit_code, 0) << timed.err;
  EXPECT_NE(timed.err.find("(Timeout)"), std::string::npos) << timed.err;
  EXPECT_GE(seconds, 0.9);
  EXPECT_LT(seconds, 8.0);
  EXPECT_TRUE(listed(a).empty());
  EXPECT_EQ(capsa({"instance", "stop", "--signal", "BOGUS", b}).exit_code, 1);
  EXPECT_EQ(listed(b).size(), 1u) << "a bad signal stops nothing";
  auto forced = capsa({"instance", "stop", "--force", prefix + "-*"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_TRUE(listed(prefix + "-*").empty());
  // A signal the start script does not ignore ends it; USR1 by number.
  ASSERT_EQ(capsa({"instance", "start", runtime::testing::busybox_sif(), a}).exit_code, 0);
  EXPECT_EQ(capsa({"instance", "stop", "-s", "10", a}).exit_code, 0);
  EXPECT_TRUE(listed(a).empty());
  // --all: every instance of the caller. In a configuration directory of the test's own
  // (APPTAINER_CONFIGDIR moves a user's records, as in Apptainer), so that it stops
  // nothing the suites running beside it started as the same user. Root's store never
  // moves (docs/instances.md): root's --all would stop the instances of the suites beside.
  std::filesystem::create_directories(dir / "config");
  const std::vector<std::string> own_store = {"APPTAINER_CONFIGDIR=" + (dir / "config")};
  if (::geteuid() == 0) {
    ASSERT_EQ(capsa({"instance", "start", runtime::testing::busybox_sif(), a}, own_store).exit_code, 0);
    EXPECT_EQ(listed(a).size(), 1u) << "root's records stay in root's store";
    EXPECT_EQ(capsa({"instance", "stop", a}).exit_code, 0);
    expect_nothing_left(image);
    return;
  }
  ASSERT_EQ(capsa({"instance", "start", runtime::testing::busybox_sif(), a}, own_store).exit_code, 0);
  ASSERT_EQ(capsa({"instance", "start", runtime::testing::busybox_sif(), b}, own_store).exit_code, 0);
  EXPECT_EQ(json::parse(capsa({"instance", "list", "--json"}, own_store).out)["instances"].size(), 2u);
  EXPECT_TRUE(listed(a).empty()) << "the records are in the configuration directory, not the default store";
  auto all = capsa({"instance", "stop", "--all"}, own_store);
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_TRUE(json::parse(capsa({"instance", "list", "--json"}, own_store).out)["instances"].empty());
  expect_nothing_left(image);
}

TEST(Instance, StatsSumsTheInstancesProcesses) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  const std::string name = unique_name("stats");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "start", image, name}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto stats = capsa({"instance", "stats", "--json", name});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  json figures = json::parse(stats.out);
  EXPECT_EQ(figures["source"], "proc");
  EXPECT_EQ(figures["pids"], 2) << "the init and the start script's sleep";
  EXPECT_GT(figures["memory_usage_bytes"].get<double>(), 0);
  auto table = capsa({"instance", "stats", name});
  EXPECT_EQ(table.out.rfind("INSTANCE NAME    CPU USAGE    MEM USAGE / LIMIT", 0), 0u) << table.out;
}

TEST(Instance, BadInputIsOneLineAndLeavesNothing) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  const std::string name = unique_name("bad");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "start", image, name}).exit_code, 0);
  const int pid = listed(name)[0]["pid"].get<int>();

  auto duplicate = capsa({"instance", "start", image, name});
  EXPECT_EQ(duplicate.exit_code, 1);
  EXPECT_EQ(line_count(duplicate.err), 1) << duplicate.err;
  EXPECT_NE(duplicate.err.find("instance " + name + " already exists"), std::string::npos) << duplicate.err;
  ASSERT_EQ(listed(name).size(), 1u);
  EXPECT_EQ(listed(name)[0]["pid"], pid) << "the first one is untouched";

  for (const auto& args : std::vector<std::vector<std::string>>{
           {"exec", "instance://no-such-instance", "true"},
           {"instance", "stop", "no-such-instance"},
           {"instance", "stats", "no-such-instance"},
           {"instance", "start", dir / "missing.sif", unique_name("missing")},
           {"instance", "start", image, "bad/name"},
           {"instance", "start", image},
           {"instance", "stop"},
       }) {
    auto result = capsa(args);
    EXPECT_NE(result.exit_code, 0) << args[1];
    EXPECT_EQ(line_count(result.err), 1) << args[1] << ": " << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
  }
  if (::geteuid() != 0) {
    auto refused = capsa({"instance", "list", "--user", "root"});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_EQ(line_count(refused.err), 1) << refused.err;
    EXPECT_NE(refused.err.find("only root"), std::string::npos) << refused.err;
  }
  EXPECT_TRUE(listed("missing-*").empty());
  EXPECT_EQ(capsa({"instance", "stop", name}).exit_code, 0);
  expect_nothing_left(image);
  expect_nothing_left(dir / "missing.sif");
}

TEST(Instance, AnotherUsersInstanceCannotBeJoined) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to start an instance and try it as the test user";
  if (!test::have_program("setpriv") || ::system("id capsa-test >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no capsa-test user";
  const std::string name = unique_name("root-owned");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "start", runtime::testing::busybox_sif(), name}).exit_code, 0);
  auto joined = test::run_process({"setpriv", "--reuid=capsa-test", "--regid=capsa-test", "--init-groups", "env",
                                   "HOME=/tmp", test::capsa_binary(), "exec", "instance://" + name, "true"});
  EXPECT_NE(joined.exit_code, 0);
  EXPECT_EQ(line_count(joined.err), 1) << joined.err;
  EXPECT_NE(joined.err.find("no instance named " + name), std::string::npos) << joined.err;
  // Nor through a record forged in the test user's own store that names root's init.
  const std::string record = test::read_file(record_directory() + "/" + name + ".json");
  auto forged = test::run_process(
      {"setpriv", "--reuid=capsa-test", "--regid=capsa-test", "--init-groups", "sh", "-c",
       "home=$(getent passwd capsa-test | cut -d: -f6); dir=$home/.capsa/instances/app/$(hostname)/capsa-test; "
       "mkdir -p \"$dir\" && cat > \"$dir/" +
           name + ".json\" && HOME=$home \"$0\" exec instance://" + name + " true",
       test::capsa_binary()},
      record);
  EXPECT_NE(forged.exit_code, 0);
  EXPECT_EQ(line_count(forged.err), 1) << forged.err;
  EXPECT_NE(forged.err.find("no instance named " + name), std::string::npos) << forged.err;
}

TEST(Instance, RootListsAndStopsAUsersInstancesWithUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "--user is root's";
  if (!test::have_program("setpriv") || ::system("id capsa-test >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no capsa-test user";
  test::TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  const std::string image = make_instance_image(dir);
  const std::string name = unique_name("users");
  auto started = test::run_process(
      {"setpriv", "--reuid=capsa-test", "--regid=capsa-test", "--init-groups", "sh", "-c",
       "cd / && HOME=$(getent passwd capsa-test | cut -d: -f6) \"$0\" instance start " + image + " " + name,
       test::capsa_binary()});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_TRUE(listed(name).empty()) << "root's own list has only root's";
  auto list = capsa({"instance", "list", "--json", "--user", "capsa-test", name});
  EXPECT_EQ(json::parse(list.out)["instances"].size(), 1u) << list.out << list.err;
  auto stats = capsa({"instance", "stats", "--json", "--user", "capsa-test", name});
  EXPECT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(json::parse(stats.out)["pids"], 2) << stats.out;
  auto stopped = capsa({"instance", "stop", "--user", "capsa-test", name});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  list = capsa({"instance", "list", "--json", "--user", "capsa-test", name});
  EXPECT_TRUE(json::parse(list.out)["instances"].empty()) << list.out;
  expect_nothing_left(image);
}

TEST(Instance, AStaleRecordIsNeverListedAndIsRemoved) {
  const std::string name = unique_name("stale");
  // A record of a process that has gone (killed capsa, rebooted node): the pid of a
  // process that has ended, and one of this live process with another start time.
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ASSERT_GT(gone, 0);
  ::waitpid(gone, nullptr, 0);
  ASSERT_EQ(capsa({"instance", "list"}).exit_code, 0);  // makes the store's directories
  std::string boot_id = test::read_file("/proc/sys/kernel/random/boot_id");
  boot_id.pop_back();
  // Gone; this live process with another start time; a record of an earlier boot.
  const std::vector<std::tuple<std::string, int, std::string>> stale = {
      {name + "-gone", gone, boot_id}, {name + "-reused", ::getpid(), boot_id}, {name + "-rebooted", ::getpid(), "x"}};
  for (const auto& [stale_name, pid, boot] : stale) {
    std::string path = record_directory();
    path.append("/").append(stale_name).append(".json");
    json record = {{"name", stale_name}, {"pid", pid},        {"startTime", 1},
                   {"bootId", boot},     {"uid", ::getuid()}, {"image", "/x.sif"}};
    std::ofstream(path) << record.dump();
    ASSERT_TRUE(std::filesystem::exists(path));
    EXPECT_TRUE(listed(stale_name).empty());
    EXPECT_FALSE(std::filesystem::exists(path)) << "pruned when read";
    std::ofstream(path) << record.dump();
    EXPECT_NE(capsa({"exec", "instance://" + stale_name, "true"}).exit_code, 0);
    EXPECT_FALSE(std::filesystem::exists(path)) << "pruned when read";
  }
}

TEST(Instance, AKilledMonitorTakesTheWholeInstanceWithIt) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  const std::string name = unique_name("killed");
  StopOnExit guard(name);
  ASSERT_EQ(capsa({"instance", "start", image, name}).exit_code, 0);
  json record = json::parse(test::read_file(record_directory() + "/" + name + ".json"));
  ASSERT_EQ(::kill(record["monitorPid"].get<int>(), SIGKILL), 0);
  for (int i = 0; i < 50 && process_alive(record["pid"].get<int>()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(process_alive(record["pid"].get<int>()));
  EXPECT_TRUE(listed(name).empty()) << "its record, left behind, is pruned";
  expect_nothing_left(image);
}

TEST(Instance, SixtyFourInstancesStartAndStopCleanly) {
  test::TempDir dir;
  const std::string image = make_instance_image(dir);
  const std::string prefix = unique_name("many");
  StopOnExit guard(prefix + "-*");
  constexpr int kCount = 64;
  for (int i = 0; i < kCount; ++i) {
    auto started = capsa({"instance", "start", image, prefix + "-" + std::to_string(i)});
    ASSERT_EQ(started.exit_code, 0) << i << ": " << started.err;
  }
  json list = listed(prefix + "-*");
  EXPECT_EQ(list.size(), static_cast<std::size_t>(kCount));
  for (const auto& entry : list) EXPECT_TRUE(process_alive(entry["pid"].get<int>())) << entry.dump();
  auto joined = capsa({"exec", "instance://" + prefix + "-63", "cat", "/tmp/started"});
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  auto stopped = capsa({"instance", "stop", prefix + "-*"});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_TRUE(listed(prefix + "-*").empty());
  for (const auto& entry : list) EXPECT_FALSE(process_alive(entry["pid"].get<int>()));
  expect_nothing_left(image);
}

}  // namespace
}  // namespace capsa::instance_testing
