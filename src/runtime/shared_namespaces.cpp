#include "runtime/shared_namespaces.hpp"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "runtime/instance.hpp"
#include "runtime/instance_state.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::runtime {

std::string shared_instance_name(pid_t parent) { return "sharens-" + std::to_string(parent); }

void launch_shared(const ActionRequest& r) {
  const pid_t parent = ::getppid();
  const std::string name = shared_instance_name(parent);
  char resolved[PATH_MAX];
  if (::realpath(r.image.c_str(), resolved) == nullptr) throw_errno(r.image);
  InstanceStore store = InstanceStore::for_caller();
  // One start per parent: siblings started at the same moment wait here, then join.
  const std::string lock_path = store.app_dir() + "/." + name + ".sharens-lock";
  UniqueFd lock = open_file(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  while (::flock(lock.get(), LOCK_EX) != 0)
    if (errno != EINTR) throw_errno("--sharens: locking " + name);
  std::optional<InstanceRecord> shared = store.find(name);
  if (!shared) {
    ActionRequest start = r;
    start.action = "start";
    start.args.clear();
    start.end_with = parent;
    log::set_level(log::Level::warning);  // the instance is the containers' business, not news
    try {
      start_instance(start, name);
    } catch (...) {
      ::unlink(lock_path.c_str());
      ::unlink((store.app_dir() + "/." + name + ".lock").c_str());
      throw;
    }
    shared = store.find(name);
    if (!shared) throw Error("--sharens: the shared instance " + name + " ended at once");
    // Nothing left behind by a name used once: a sibling still waiting on this lock finds
    // the instance once it has the lock, and a later one, which opens a new file, finds it
    // at once; the name lock of start_instance is only ever taken under this one; the
    // logs stay open in the instance, which is hidden.
    for (const std::string& path :
         {lock_path, store.app_dir() + "/." + name + ".lock", shared->log_out, shared->log_err})
      ::unlink(path.c_str());
  } else {
    ::unlink(lock_path.c_str());  // made again by this sibling's open: gone with it
    if (shared->image != resolved)
      throw Error(std::string("--sharens: the containers of process ") + std::to_string(parent) + " share " +
                  shared->image + "; " + r.image + " is another image");
  }
  lock.reset();
  join_container(*shared, r);
}

}  // namespace capsa::runtime
