#pragma once
// Where capsa keeps what it knows of the instances a user started (`capsa instance
// start`), laid out as Apptainer lays out ~/.apptainer/instances:
//   BASE/app/HOST/USER/NAME.json     the record below (0600, directories 0700)
//   BASE/logs/HOST/USER/NAME.out|err the instance's standard output and error
// BASE is ~/.capsa/instances (the home of the user database, not $HOME, so a job's
// environment cannot point it elsewhere), and /var/lib/capsa/instances for root.
//
// Records are read through descriptors: below the home (or the configuration directory)
// each directory must be the store owner's (a symbolic link is followed, and what it
// leads to judged by its owner), and a record is read only when it is a regular file of the owner's, opened
// without blocking, of at most 64 KiB. Anything else found there (a symbolic link, a FIFO,
// a directory) is no record and is left alone; a regular file that describes no live
// instance is removed. Root acts on another user's store only as that user (for_user).
//
// A record is believed only while the process it names is the one it recorded: the pid,
// its start time (/proc/PID/stat) and the boot it started in. A record of a process that
// has gone (killed capsa, SIGKILL'ed job, rebooted node) is removed when it is read, so
// no command ever shows or acts on a dead instance.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace capsa::runtime {

struct InstanceRecord {
  std::string name;
  pid_t pid = -1;                // the instance's init (PID 1 of its PID namespace), in the host's numbering
  std::uint64_t start_time = 0;  // its start time, clock ticks after boot (/proc/PID/stat field 22)
  pid_t monitor = -1;            // capsa's process outside the PID namespace (holds the FUSE server)
  std::uint64_t monitor_start_time = 0;
  std::string boot_id;  // /proc/sys/kernel/random/boot_id when it started
  uid_t uid = 0;
  std::string image;  // absolute path
  std::string ip;     // always "" (capsa sets up no CNI network)
  std::string log_out;
  std::string log_err;
  std::string home;  // HOME inside (the join composes the same environment)
  bool fakeroot = false;
  std::string job_id;   // SLURM_JOB_ID, "" outside a job
  std::string step_id;  // SLURM_STEP_ID ("batch" in a batch script)
  std::string created;  // RFC 3339
  std::string kept_key;  // a kept image's (kept_image.hpp); "" for an instance
};

// Instance names: what Apptainer accepts, letters, digits, '.', '_' and '-', 1 to 128 of
// them, not starting with '.' (a name is a file name here). Throws Error otherwise.
void check_instance_name(const std::string& name);

class InstanceStore {
 public:
  // The calling user's store; its directories are made (0700) when missing. As Apptainer
  // keeps instances in the user's configuration directory, $APPTAINER_CONFIGDIR
  // ($SINGULARITY_CONFIGDIR) moves it to DIR/instances, for users only: root's store
  // stays in /var/lib/capsa, whatever environment a root shell took from a user (sudo -E).
  static InstanceStore for_caller();
  // `user`'s store (root's -u/--user); "" is the caller's. Root first becomes `user`
  // for good (util/become_user.hpp): the store is the user's to shape, so everything
  // the rest of the command does to it, and the signals of `instance stop`, are the
  // user's own acts. Throws Error for anyone but root, and for a user the user database
  // does not know.
  static InstanceStore for_user(const std::string& user);

  const std::string& app_dir() const { return app_dir_; }
  const std::string& log_dir() const { return log_dir_; }
  std::string record_path(const std::string& name) const { return app_dir_ + "/" + name + ".json"; }

  // The live record of `name`; a dead one is removed and nullopt returned.
  std::optional<InstanceRecord> find(const std::string& name) const;
  // The live records whose name matches the shell pattern `glob` ("*": all), by name.
  std::vector<InstanceRecord> list(const std::string& glob = "*") const;
  // The live records of kept images (kept_image.hpp), which list() leaves out.
  std::vector<InstanceRecord> list_kept() const;
  // Writes `record` atomically (0600).
  void save(const InstanceRecord& record) const;
  // Removes the record of `name` if it still names `pid` (a new instance of the same name
  // keeps its own).
  void remove_if(const std::string& name, pid_t pid) const;

 private:
  // The live records whose name (the file's, without ".json") `wanted` accepts, by name.
  std::vector<InstanceRecord> live_records(const std::function<bool(const std::string&)>& wanted) const;
  // find() in the record directory `dir` (open_app_dir()).
  std::optional<InstanceRecord> find_in(int dir, const std::string& name) const;
  // The record directory, opened a component at a time below trusted_; an empty
  // descriptor when it does not exist. Throws Error when a component is no directory
  // or not the owner's.
  UniqueFd open_app_dir() const;
  // The store at TRUSTED/BELOW (e.g. HOME and .capsa/instances) for `user` on this host:
  // TRUSTED is taken as it is, each directory below it must be the owner's.
  static InstanceStore at(const std::string& trusted, const std::string& below, const std::string& user, uid_t uid,
                          bool create);
  // The store of `uid`, whose home is `home`, unless the configuration directory is moved.
  static InstanceStore default_store(uid_t uid, const std::string& home, const std::string& user, bool create);
  std::string trusted_;
  std::string app_dir_;
  std::string log_dir_;
  uid_t uid_ = 0;  // whose instances the store records
};

// Whether the record's init is still the process it recorded.
bool instance_alive(const InstanceRecord& record);

// Field 22 of /proc/PID/stat (the start time in clock ticks after boot), 0 when the
// process is gone; its owner's real uid through `uid` when asked for.
std::uint64_t process_start_time(pid_t pid, uid_t* uid = nullptr);
std::string current_boot_id();

std::string record_to_json(const InstanceRecord& record);
InstanceRecord record_from_json(const std::string& text, const std::string& what);

}  // namespace capsa::runtime
