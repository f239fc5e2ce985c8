// `exec|run|shell|test instance://NAME`: this process joins the namespaces of the
// instance's init (user first where it has its own, so that capsa holds the rights to join
// the others), enters its root, and forks into its PID namespace (setns on a PID namespace
// applies to children only); the child runs the action as a container start would.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "image/directory_files.hpp"
#include "runtime/cgroups/container_cgroup.hpp"
#include "runtime/container_exec.hpp"
#include "runtime/environment.hpp"
#include "runtime/instance.hpp"
#include "runtime/instance_state.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/process.hpp"
#include "util/start_phases.hpp"

namespace capsa::runtime {
namespace {

struct Namespace {
  const char* name;
  int type;
};
// The user namespace first: joining it gives the rights to join the rest.
constexpr Namespace kNamespaces[] = {{"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS},  {"ipc", CLONE_NEWIPC},
                                     {"uts", CLONE_NEWUTS},   {"net", CLONE_NEWNET}, {"pid", CLONE_NEWPID}};

bool same_file(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void enter_directory(const std::string& wanted, const std::string& home) {
  if (::chdir(wanted.c_str()) == 0) return;
  if (::chdir(home.c_str()) != 0 && ::chdir("/") != 0) throw_errno("entering the instance's root");
}

std::string current_directory() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string("/");
}

// What a command joining instance `record` gets: what any container gets, with the
// instance's image and home in place of the caller's (a join adds no binds of its own),
// and the instance's name.
ComposedEnvironment instance_environment(const InstanceRecord& record, const ActionRequest& r) {
  ActionRequest joining = r;
  joining.image = record.image;
  joining.binds.clear();
  ComposedEnvironment env = compose_container_environment(joining, current_environment(), record.home);
  env.process["APPTAINER_INSTANCE"] = env.process["SINGULARITY_INSTANCE"] = record.name;
  return env;
}

}  // namespace

void join_instance(const ActionRequest& r) {
  const std::string name = r.image.substr(std::string("instance://").size());
  check_instance_name(name);
  std::optional<InstanceRecord> record = InstanceStore::for_caller().find(name);
  if (!record)
    throw Error("no instance named " + name + " of yours is running (`capsa instance list` shows yours; " +
                "another user's instance cannot be joined)");
  join_container(*record, r);
}

void join_container(const InstanceRecord& record, const ActionRequest& r, bool own_pid_namespace) {
  const std::string& name = record.name;
  const std::string proc = "/proc/" + std::to_string(record.pid);
  std::vector<std::pair<UniqueFd, const Namespace*>> joins;
  UniqueFd root;
  // Nothing has changed yet: a failure here leaves the caller free to do something else
  // (a kept image that has just ended is started anew).
  try {
    for (const Namespace& ns : kNamespaces) {
      if (ns.type == CLONE_NEWPID && !own_pid_namespace) continue;
      UniqueFd fd(::open((proc + "/ns/" + ns.name).c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) throw_errno("instance " + name + ": opening its " + std::string(ns.name) + " namespace");
      if (!same_file(fd.get(), std::string("/proc/self/ns/") + ns.name)) joins.emplace_back(std::move(fd), &ns);
    }
    root = UniqueFd(::open((proc + "/root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) throw_errno("instance " + name + ": opening its root");
    // The record may have outlived its process between the check and the opens: the
    // namespaces above belong to the recorded init only if it is still the same process.
    if (!instance_alive(record)) throw Error("instance " + name + " has just ended");
    join_cgroups_of(record.pid);  // on the host, before the namespaces: the instance's limits hold
  } catch (const Error& e) {
    throw NotJoined(e.what());
  }
  // Composed on the host (the image's path is the caller's, relative to its directory). A
  // kept image's container is any other container to itself: launch's environment, its own
  // image path and binds. An instance's join shows the instance's image and name.
  const ComposedEnvironment env = own_pid_namespace
                                      ? instance_environment(record, r)
                                      : compose_container_environment(r, current_environment(), record.home);
  const std::string cwd = current_directory();
  for (const auto& [fd, ns] : joins)
    if (::setns(fd.get(), ns->type) != 0)
      throw_errno("joining the " + std::string(ns->name) + " namespace of instance " + name);
  if (::fchdir(root.get()) != 0 || ::chroot(".") != 0) throw_errno("entering the root of instance " + name);
  phases::mark("joined");

  ActionRequest action = r;
  action.image = record.image;

  Process child;
  if (own_pid_namespace)
    child = Process::fork(
        {.parent_death_signal = SIGKILL, .check_parent_alive = false, .name = "the command in the instance"});
  if (own_pid_namespace && !child.in_child()) {
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGCONT, SIGWINCH, SIGCHLD})
      sigaddset(&forwarded, sig);
    ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
    exit_like(child.supervise(forwarded));
  }
  enter_directory(r.pwd.empty() ? cwd : r.pwd, record.home);
  exec_in_container(action, env, image::DirectoryFiles("/"), Entry::joined);
}

}  // namespace capsa::runtime
