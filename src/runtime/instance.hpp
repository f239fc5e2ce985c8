#pragma once
// `capsa instance start|run|list|stop|stats` and `exec|run|shell|test instance://NAME`
// (docs/instances.md). An instance is a container whose namespaces outlive the command
// that started it: instance_init.hpp describes its processes, instance_state.hpp its
// record, instance_job.hpp how it ends with its Slurm job.
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/launch.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

// Starts `request` (action "start": the image's start script, or "run": its runscript)
// as the instance `name`, and returns once it can be joined; its output goes to the log
// files of the record. Throws Error, leaving nothing running or mounted, when the name is
// taken or invalid or the container cannot start.
// A non-empty `pid_file` gets the instance's pid (--pid-file).
void start_instance(ActionRequest request, const std::string& name, const std::string& pid_file = "");

// `instance list [--json] [--logs] [GLOB]`: Apptainer's table or JSON on stdout.
enum class ListFormat { table, logs, json };
// `user` (root's -u/--user) names whose instances; "" is the caller's.
void list_instances(const std::string& glob, ListFormat format, const std::string& user = "");

// `instance stop`: sends `signal` to the instances matching `glob` (their init passes it
// on), waits up to `timeout` for each to end, then kills what is left. Returns when every
// process of theirs has gone. Throws Error when no instance matches.
void stop_instances(const std::string& glob, int signal, std::chrono::milliseconds timeout,
                    const std::string& user = "");

// The stopping itself, for records already found (kept images too); `say`: a line each.
struct InstanceRecord;
class InstanceStore;
void stop_records(const InstanceStore& store, const std::vector<InstanceRecord>& records, int signal,
                  std::chrono::milliseconds timeout, bool say);

// The signal --signal names: "TERM", "SIGTERM" or "15". Throws Error otherwise.
int parse_signal(const std::string& text);

// `instance stats [--json] NAME`.
void print_instance_stats(const std::string& name, bool json, const std::string& user = "");

// `exec|run|shell|test instance://NAME`: joins the instance's namespaces and runs the
// action there. Never returns.
[[noreturn]] void join_instance(const ActionRequest& request);

// For kept images (kept_image.hpp), which are instances too:
struct InstanceRecord;
class InstanceStore;
struct KeptOptions {
  std::string key;    // what the containers that may join it have in common (kept_image.cpp)
  int linger_ms = 0;  // how long it outlives the last of them
};
// Starts `request` as the instance `name` of `store` and saves its record (the caller
// holds the name's lock); `kept` makes it a kept image. Throws Error as start_instance.
InstanceRecord spawn_instance(ActionRequest request, const std::string& name, const InstanceStore& store,
                              const KeptOptions* kept);
// The lock on `name` (flock `operation`), close-on-exec: held exclusively while an
// instance of that name starts, shared while a container joins a kept image (until its
// command's exec).
UniqueFd lock_instance_name(const InstanceStore& store, const std::string& name, int operation);

// The join itself, for any live record: `request`'s action runs inside the container the
// record's init holds. Kept images (a container of an image held between short tasks)
// are meant to reuse this and instance_init.hpp's holder rather than a mechanism of
// their own.
// Thrown by join_container when it could not join and has changed nothing yet.
struct NotJoined : Error {
  using Error::Error;
};
// `own_pid_namespace` false (a kept image): the command runs in the host's PID namespace,
// as any other container's does, without a fork.
[[noreturn]] void join_container(const InstanceRecord& record, const ActionRequest& request,
                                 bool own_pid_namespace = true);

}  // namespace capsa::runtime
