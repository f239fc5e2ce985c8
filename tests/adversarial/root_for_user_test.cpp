// Root acting on a user's instance store (`capsa instance list|stop|stats --user U`, and
// root's own store): the store is U's to shape, so U is the attacker here, and what must
// survive is root's: a root-owned file, root's own processes, root's command itself.
// docs/instances.md, "Root and --user".
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "people.hpp"
#include "support/background.hpp"

namespace capsa::adversarial {
namespace {

namespace fs = std::filesystem;

const Person& root() {
  static const Person person{0, 0, "root", "/root"};
  return person;
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// Where `who`'s instance records are (runtime/instance_state.hpp).
std::string store_of(const Person& who) { return who.home + "/.capsa/instances/app/" + host_name() + "/" + who.name; }

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A record as capsa writes it, naming the live process `pid` as the instance `name` of `uid`.
std::string record_naming(pid_t pid, uid_t uid, const std::string& name) {
  const std::string stat = text_of("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field, start;
  for (int index = 3; fields >> field; ++index)
    if (index == 22) start = field;
  std::string boot = text_of("/proc/sys/kernel/random/boot_id");
  boot.erase(boot.find_last_not_of("\n ") + 1);
  return "{\"name\": \"" + name + "\", \"pid\": " + std::to_string(pid) + ", \"startTime\": " + start +
         ", \"bootId\": \"" + boot + "\", \"uid\": " + std::to_string(uid) + ", \"image\": \"/forged.sif\"}\n";
}

// Still running: a process killed but not yet reaped (a zombie) is not.
bool alive(pid_t pid) {
  const std::string stat = text_of("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// The attacker's store, emptied for the test and given back after.
class AttackersStore {
 public:
  AttackersStore() : path_(store_of(attacker())) {
    const auto moved = shell_as(attacker(), "mkdir -p \"$(dirname '" + path_ + "')\" && rm -rf '" + path_ +
                                                ".saved' && { ! test -e '" + path_ + "' || mv '" + path_ + "' '" +
                                                path_ + ".saved'; }");
    if (moved.exit_code != 0) throw std::runtime_error("cannot set the attacker's store aside: " + moved.err);
  }
  ~AttackersStore() {
    shell_as(attacker(), "rm -rf '" + path_ + "' && { ! test -e '" + path_ + ".saved' || mv '" + path_ + ".saved' '" +
                             path_ + "'; }");
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Finding: root's `instance list --user U` read U's store through a symbolic link U made
// and removed every *.json there that was no live record.
TEST(RootForUser, ASymlinkedStoreCannotMakeRootRemoveRootsFiles) {
  const OwnedDir roots(root());
  const std::string important = roots.write("important.json", "{\"root's\": true}\n");
  const AttackersStore store;
  ASSERT_EQ(shell_as(attacker(), "ln -s '" + roots.path() + "' '" + store.path() + "'").exit_code, 0);
  // The attack's step works: through the link the attacker's store is root's directory.
  ASSERT_EQ(shell_as(attacker(), "test -f '" + store.path() + "/important.json'").exit_code, 0);

  for (const char* command : {"list", "stop"}) {
    const auto result = test::run_process({site_capsa(), "instance", command, "--user", attacker().name}, "", 30);
    EXPECT_EQ(result.signal, 0) << command;
    EXPECT_TRUE(fs::exists(important)) << "root's instance " << command << " --user removed " << important << "\n"
                                       << result.err;
  }
  const auto stats =
      test::run_process({site_capsa(), "instance", "stats", "--user", attacker().name, "important"}, "", 30);
  EXPECT_TRUE(fs::exists(important)) << stats.err;
  EXPECT_NE(stats.exit_code, 0);
}

// Finding: a FIFO named like a record made root's command hang (and a link to /dev/zero
// would have read without end); neither is a record, and both are left as they are.
TEST(RootForUser, AFifoOrDeviceInTheStoreCannotHangRoot) {
  const AttackersStore store;
  ASSERT_EQ(shell_as(attacker(), "mkdir -p '" + store.path() + "' && mkfifo '" + store.path() +
                                     "/hang.json' && ln -s /dev/zero '" + store.path() + "/zero.json'")
                .exit_code,
            0);
  ASSERT_TRUE(fs::is_fifo(store.path() + "/hang.json"));

  const auto list = test::run_process({site_capsa(), "instance", "list", "--user", attacker().name}, "", 20);
  EXPECT_EQ(list.signal, 0) << "root's instance list --user hung on the FIFO";
  EXPECT_EQ(list.exit_code, 0) << list.err;
  for (const std::string name : {"hang", "zero"}) {
    const auto stats = test::run_process({site_capsa(), "instance", "stats", "--user", attacker().name, name}, "", 20);
    EXPECT_EQ(stats.signal, 0) << "root's instance stats --user hung on " << name;
    EXPECT_NE(stats.err.find("no instance named " + name), std::string::npos) << stats.err;
  }
  // Not capsa's files: not removed either.
  EXPECT_TRUE(fs::is_fifo(store.path() + "/hang.json"));
  EXPECT_TRUE(fs::is_symlink(store.path() + "/zero.json"));
}

// A record U forged to name another user's process: root's `instance stop --user U`
// signals nothing of the other user's (the record's uid and the process's owner must be
// U's, and the signal is sent as U).
TEST(RootForUser, AForgedRecordCannotMakeRootSignalAnotherUsersProcess) {
  test::Background victims({"setpriv", "--reuid=" + std::to_string(victim().uid),
                            "--regid=" + std::to_string(victim().gid), "--clear-groups", "sleep", "300"},
                           "");
  ::usleep(200'000);
  ASSERT_TRUE(alive(victims.pid()));
  const AttackersStore store;
  for (const auto& [name, uid] : {std::pair<std::string, uid_t>{"as-attacker", attacker().uid},
                                  std::pair<std::string, uid_t>{"as-victim", victim().uid}}) {
    const std::string record = record_naming(victims.pid(), uid, name);
    std::string plant = "mkdir -p '" + store.path() + "' && cat > '";
    plant.append(store.path()).append("/").append(name).append(".json' <<'END'\n").append(record).append("END\n");
    ASSERT_EQ(shell_as(attacker(), plant).exit_code, 0);
    const auto stopped = test::run_process(
        {site_capsa(), "instance", "stop", "--signal", "KILL", "--user", attacker().name, name}, "", 30);
    EXPECT_NE(stopped.exit_code, 0) << stopped.err;
    EXPECT_TRUE(alive(victims.pid())) << "root's instance stop --user killed the victim's process through " << name;
  }
}

// Finding: root honoured APPTAINER_CONFIGDIR for its own store, so a root shell with a
// user's environment (sudo -E) stopped a root process named by a record in the user's
// directory.
TEST(RootForUser, RootIgnoresAUsersConfigDirectory) {
  test::Background roots_process({"sleep", "300"}, "");
  ::usleep(200'000);
  ASSERT_TRUE(alive(roots_process.pid()));
  const OwnedDir configdir(attacker());
  const std::string records = configdir.path() + "/instances/app/" + host_name() + "/root";
  ASSERT_EQ(shell_as(attacker(), "mkdir -p '" + records + "' && cat > '" + records + "/forged.json' <<'END'\n" +
                                     record_naming(roots_process.pid(), 0, "forged") + "END\n")
                .exit_code,
            0);
  const std::string env = "APPTAINER_CONFIGDIR=" + configdir.path();
  const auto list = test::run_process({"env", env, site_capsa(), "instance", "list", "--json"}, "", 30);
  EXPECT_EQ(list.out.find("forged"), std::string::npos) << list.out;
  const auto stopped = test::run_process({"env", env, site_capsa(), "instance", "stop", "forged"}, "", 30);
  EXPECT_NE(stopped.exit_code, 0) << stopped.err;
  EXPECT_TRUE(alive(roots_process.pid())) << "root's instance stop killed root's process named in a user's directory";
}

}  // namespace
}  // namespace capsa::adversarial
