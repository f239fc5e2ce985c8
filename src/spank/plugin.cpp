// libcapsa_spank.so: the SPANK entry points (docs/slurm-plugin.md). Only Slurm's C ABI
// lives here; what the options mean and which `capsa` commands follow from them is in
// container_request.cpp, how a command runs as the job's user in run_as_user.cpp, and a
// named container's files in named_container.cpp.
//
// Per job step and node:
//   srun (local), sbatch and salloc (allocator)
//                          the options are checked (init_post_opt): a bad value fails the
//                          command before anything is allocated, with one line. Slurm
//                          puts sbatch's and salloc's options into the job's environment
//                          (SLURM_SPANK__SLURM_SPANK_OPTION_capsa_*): the batch script
//                          runs in the container, and every srun of the job inherits them.
//   slurmstepd user_init   once per step and node, with the user's ids: `capsa instance
//                          start IMAGE spank-JOB.STEP` (the pull goes through capsa's
//                          locked cache, so a node pulls an image once). Its failure fails
//                          the step, with capsa's line in the job's stderr.
//   each task, task_init   the task's argv[0] becomes capsa-spank-task, which executes
//                          `capsa exec [--pwd DIR] instance://spank-JOB.STEP ARGV...`: the
//                          tasks of the step share the instance's image mount, and Slurm
//                          still does everything it does before exec (MPI/PMIx variables,
//                          task prolog, TMPDIR, the user's limits).
//   slurmstepd task_exit   after the node's last task (also after scancel): with
//                          --container-save and every task of the node successful, `capsa
//                          instance save`; then `capsa instance stop`, synchronously, so
//                          that a later step of the same --container-name finds its layer
//                          free (exit, should it not have run). The instance's monitor also
//                          stops it when slurmstepd exits.
//   slurmd job_epilog      a named container's files of the job are removed.
extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spank/container_request.hpp"
#include "spank/named_container.hpp"
#include "spank/pmix_dir.hpp"
#include "spank/run_as_user.hpp"
#include "util/own_directory.hpp"

extern "C" {
// SPANK_PLUGIN(capsa, 1), spelt out: in C++ a namespace-scope const has internal linkage,
// and Slurm looks these symbols up.
extern const char plugin_name[] = "capsa";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

// What the callbacks return: Slurm takes a negative value as failure (the ESPANK_* codes
// of the spank_* functions are positive).
constexpr int ok = 0;
constexpr int failed = -1;

using capsa::spank::ContainerRequest;

// The plugin's state in one process (srun, slurmstepd or slurmd's prolog/epilog).
struct PluginState {
  std::string capsa = CAPSA_SPANK_DEFAULT_CAPSA;    // plugstack.conf: capsa=PATH
  std::string helper = CAPSA_SPANK_DEFAULT_HELPER;  // helper=PATH
  std::string state_dir = "/tmp";                   // statedir=DIR (named containers)
  ContainerRequest request;
  bool option_seen = false;
  std::string started_instance;  // in slurmstepd, once user_init started it
  bool start_failed = false;     // user_init said why; the tasks must not run
  uint32_t exited_tasks = 0;     // of this node, seen by task_exit
  bool task_failed = false;      // a task of this node did not exit 0 (no --container-save)
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<std::string> env;  // the job's environment, for `instance stop`
};
PluginState state;

constexpr const char* option_names[] = {"container-image",      "container-mounts",        "container-workdir",
                                        "container-name",       "container-writable",      "container-readonly",
                                        "container-remap-root", "no-container-remap-root", "container-env",
                                        "container-mount-home", "no-container-mount-home", "container-save",
                                        "container-entrypoint", "no-container-entrypoint"};

int on_option(int val, const char* optarg, int /*remote*/) {
  try {
    capsa::spank::apply_option(state.request, option_names[val], optarg);
    state.option_seen = true;
    return ok;
  } catch (const std::exception& e) {
    slurm_error("capsa: %s", e.what());
    return failed;
  }
}

// Slurm's table holds char*; the strings are never written.
spank_option option(int index, const char* arg, const char* usage) {
  return {const_cast<char*>(option_names[index]),
          const_cast<char*>(arg),
          const_cast<char*>(usage),
          arg != nullptr ? 1 : 0,
          index,
          on_option};
}
}  // namespace

extern "C" {
struct spank_option spank_options[] = {
    option(
        0, "IMAGE",
        "[capsa] run each task in IMAGE: docker://[REGISTRY#]IMAGE[:TAG], oras://..., library://..., or /path/img.sif"),
    option(1, "SRC[:DST[:ro|rw]],...", "[capsa] bind host paths into the container"),
    option(2, "DIR", "[capsa] working directory of the tasks inside the container"),
    option(3, "NAME", "[capsa] a named container: later steps of the job reuse its files"),
    option(4, nullptr, "[capsa] make the container writable (kept in a named container)"),
    option(5, nullptr, "[capsa] keep the container read-only (the default)"),
    option(6, nullptr, "[capsa] be root inside the container (capsa --fakeroot)"),
    option(7, nullptr, "[capsa] keep your own uid inside the container (the default)"),
    option(8, "NAME[,NAME...]", "[capsa] these job variables win over the image's values"),
    option(9, nullptr, "[capsa] bind your home directory into the container (the default)"),
    option(10, nullptr, "[capsa] do not bind your home directory into the container"),
    option(11, "PATH", "[capsa] save the container's root as a SIF image at PATH once the step has succeeded"),
    option(12, nullptr, "[capsa] run the task through the image's entrypoint (runscript)"),
    option(13, nullptr, "[capsa] run the task's command itself (the default)"),
    SPANK_OPTIONS_TABLE_END};
}

namespace {

template <typename... T>
bool item(spank_t sp, spank_item_t what, T*... values) {
  return spank_get_item(sp, what, values...) == ESPANK_SUCCESS;
}

std::vector<std::string> job_environment(spank_t sp) {
  std::vector<std::string> env;
  char** job_env = nullptr;
  if (item(sp, S_JOB_ENV, &job_env) && job_env != nullptr)
    for (char** entry = job_env; *entry != nullptr; ++entry) env.emplace_back(*entry);
  return env;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// A step whose tasks run in the container: the tasks of srun, and the batch script of
// `sbatch --container-image` (as pyxis does); not the extern or interactive step.
bool container_step(uint32_t step_id) { return step_id != SLURM_EXTERN_CONT && step_id != SLURM_INTERACTIVE_STEP; }

// The batch script, which slurmstepd runs from its spool directory: bound read-only into
// the container at the same path, so that the task's command finds it there.
bool bind_batch_script(spank_t sp, ContainerRequest& request) {
  int argc = 0;
  char** argv = nullptr;
  if (!item(sp, S_JOB_ARGV, &argc, &argv) || argc < 1 || argv == nullptr || argv[0] == nullptr || argv[0][0] != '/')
    return false;
  request.mounts.push_back({argv[0], argv[0], true});
  return true;
}

// NAME's value in the task's environment, however long (spank_getenv copies into a
// buffer of the caller's and says when it was too small); nullopt when it is not set.
std::optional<std::string> job_variable(spank_t sp, const std::string& name) {
  for (std::size_t size = std::size_t{64} * 1024; size <= std::size_t{64} * 1024 * 1024; size *= 4) {
    std::vector<char> value(size);
    const spank_err_t got = spank_getenv(sp, name.c_str(), value.data(), static_cast<int>(value.size()));
    if (got == ESPANK_SUCCESS) return std::string(value.data());
    if (got != ESPANK_NOSPACE) return std::nullopt;
  }
  return std::nullopt;
}

// Prints `line` where the user sees it: slurmstepd's stderr is the job's stderr by then.
void tell_user(const std::string& line) { slurm_error("%s", line.c_str()); }

int start_instance(spank_t sp) {
  uint32_t job_id = 0, step_id = 0;
  if (!item(sp, S_JOB_ID, &job_id) || !item(sp, S_JOB_STEPID, &step_id) || !item(sp, S_JOB_UID, &state.uid) ||
      !item(sp, S_JOB_GID, &state.gid)) {
    tell_user("capsa: error: the SPANK plugin cannot read the job's ids");
    return failed;
  }
  if (!container_step(step_id)) return ok;
  state.env = job_environment(sp);
  capsa::spank::set_variable(state.env, "SLURM_JOB_ID", std::to_string(job_id));
  const bool batch = step_id == SLURM_BATCH_SCRIPT;
  // A batch script has no SLURM_STEP_ID (capsa's instance monitor reads it as "batch").
  if (batch)
    std::erase_if(state.env, [](const std::string& entry) { return entry.starts_with("SLURM_STEP_ID="); });
  else
    capsa::spank::set_variable(state.env, "SLURM_STEP_ID", std::to_string(step_id));
  std::string image = state.request.image;
  std::optional<capsa::spank::NamedState> named;
  try {
    if (!state.request.name.empty()) {
      // user_init runs with the user's effective ids: what it makes is the user's.
      const auto paths =
          capsa::spank::named_container_paths(capsa::spank::user_state_dir(state.state_dir, state.uid, true),
                                              host_name(), std::to_string(job_id), state.request.name);
      image = capsa::spank::prepare_named_container(paths, state.uid, image);
      named = capsa::spank::NamedState{paths.overlay_dir};
    }
  } catch (const std::exception& e) {
    tell_user(std::string("capsa: error: ") + e.what());
    return failed;
  }
  const std::string instance =
      batch ? "spank-" + std::to_string(job_id) + ".batch" : capsa::spank::instance_name(job_id, step_id);
  ContainerRequest step_request = state.request;
  const auto pmix_dir =
      batch ? std::string() : capsa::spank::pmix_server_dir(std::to_string(job_id), std::to_string(step_id));
  if (!pmix_dir.empty()) step_request.mounts.push_back({pmix_dir, pmix_dir, false});
  if (batch && !bind_batch_script(sp, step_request)) {
    tell_user("capsa: error: the SPANK plugin cannot find the batch script");
    return failed;
  }
  const auto argv =
      capsa::spank::instance_start_argv(state.capsa, step_request, image, instance, named ? &*named : nullptr);
  const auto result = capsa::spank::run_as_user({argv, state.env, state.uid, state.gid});
  if (result.exit_code != 0) {
    tell_user(capsa::spank::last_line(result.output, "capsa: error: `capsa instance start` failed for " + image));
    return failed;
  }
  state.started_instance = instance;
  return ok;
}

// `capsa instance stop`, synchronously, so that a later step of the same --container-name
// finds its layer free. The instance's monitor also stops it when slurmstepd exits.
void stop_instance() {
  if (state.started_instance.empty()) return;
  const auto result = capsa::spank::run_as_user(
      {{state.capsa, "instance", "stop", "--timeout", "5", state.started_instance}, state.env, state.uid, state.gid});
  if (result.exit_code != 0)
    slurm_info("capsa: stopping instance %s: exit %d: %s", state.started_instance.c_str(), result.exit_code,
               capsa::spank::last_line(result.output, "no output").c_str());
  state.started_instance.clear();
}

// --container-save: once per node, after the node's last task, before the instance
// stops (a --writable-tmpfs layer goes with it); only when every task of the node
// succeeded. `capsa instance save` writes under a temporary name: a failure leaves nothing.
void save_container() {
  if (state.request.save_path.empty() || state.started_instance.empty()) return;
  if (state.task_failed) {
    tell_user("capsa: --container-save: " + state.request.save_path + " not written: a task of the step failed");
    return;
  }
  std::string job_dir;
  for (const auto& entry : state.env)
    if (entry.starts_with("PWD=")) job_dir = entry.substr(4);
  try {
    const auto target = capsa::spank::save_target(state.request.save_path, job_dir);
    const auto result =
        capsa::spank::run_as_user({capsa::spank::instance_save_argv(state.capsa, state.started_instance, target),
                                   state.env, state.uid, state.gid});
    if (result.exit_code != 0)
      tell_user(capsa::spank::last_line(result.output, "capsa: error: `capsa instance save` failed for " + target));
  } catch (const std::exception& e) {
    tell_user(std::string("capsa: error: ") + e.what());
  }
}

}  // namespace

extern "C" {

// Arguments of the plugstack.conf line: capsa=PATH helper=PATH statedir=DIR.
int slurm_spank_init(spank_t sp, int ac, char** av) {
  // Slurm offers the spank_options table to srun and slurmstepd only: sbatch and salloc
  // take the options once they are registered there.
  if (spank_context() == S_CTX_ALLOCATOR)
    for (spank_option* opt = spank_options; opt->name != nullptr; ++opt)
      if (spank_option_register(sp, opt) != ESPANK_SUCCESS) {
        slurm_error("capsa: cannot register --%s", opt->name);
        return failed;
      }
  for (int i = 0; i < ac; ++i) {
    const std::string arg = av[i];
    if (arg.starts_with("capsa=")) {
      state.capsa = arg.substr(6);
    } else if (arg.starts_with("helper=")) {
      state.helper = arg.substr(7);
    } else if (arg.starts_with("statedir=")) {
      state.state_dir = arg.substr(9);
    } else {
      slurm_error("capsa: unknown plugstack.conf argument '%s' (capsa=PATH, helper=PATH, statedir=DIR)", av[i]);
      return failed;
    }
  }
  return ok;
}

// srun: options that need a container without naming one are refused before the job starts.
int slurm_spank_init_post_opt(spank_t /*sp*/, int /*ac*/, char** /*av*/) {
  if (state.option_seen && !state.request.wanted()) {
    slurm_error("capsa: the --container-* options need --container-image or --container-name");
    return failed;
  }
  // The options as the command line left them, for slurmstepd (encode_flags).
  if (spank_context() != S_CTX_REMOTE && state.option_seen) {
    const std::pair<const char*, std::string> outcome[] = {
        {"CAPSA_SPANK_FLAGS", capsa::spank::encode_flags(state.request)},
        {"CAPSA_SPANK_MOUNTS", capsa::spank::joined_mounts(state.request)},
        {"CAPSA_SPANK_ENV", capsa::spank::joined_env_names(state.request)}};
    for (const auto& [name, value] : outcome)
      if (::setenv(name, value.c_str(), 1) != 0) {
        slurm_error("capsa: cannot set %s", name);
        return failed;
      }
  }
  return ok;
}

int slurm_spank_user_init(spank_t sp, int /*ac*/, char** /*av*/) {
  if (spank_context() != S_CTX_REMOTE || !state.request.wanted()) return ok;
  // A failure is told here (capsa's line, in the job's stderr) but returned by each task's
  // task_init: srun 22.05 exits 0 when user_init fails ("task launch failed"), and 1
  // when the tasks exit 1.
  // What srun, sbatch or salloc gathered (encode_flags, joined_mounts): Slurm hands over
  // the last value of each option only, in its own order.
  try {
    if (const auto flags = job_variable(sp, "CAPSA_SPANK_FLAGS")) capsa::spank::apply_flags(state.request, *flags);
    if (const auto mounts = job_variable(sp, "CAPSA_SPANK_MOUNTS"))
      state.request.mounts =
          mounts->empty() ? std::vector<capsa::spank::ContainerMount>{} : capsa::spank::parse_mounts(*mounts);
    if (const auto names = job_variable(sp, "CAPSA_SPANK_ENV"))
      state.request.env_names = names->empty() ? std::vector<std::string>{} : capsa::spank::parse_env_names(*names);
  } catch (const std::exception& e) {
    tell_user(std::string("capsa: error: ") + e.what());
    state.start_failed = true;
    return ok;
  }
  state.start_failed = start_instance(sp) != ok;
  return ok;
}

int slurm_spank_task_init(spank_t sp, int /*ac*/, char** /*av*/) {
  if (spank_context() != S_CTX_REMOTE) return ok;
  // The instance could not start (user_init): the task ends with status 1 before its
  // command runs outside the container it asked for.
  if (state.start_failed) return failed;
  if (state.started_instance.empty()) return ok;
  int argc = 0;
  char** argv = nullptr;
  if (!item(sp, S_JOB_ARGV, &argc, &argv) || argc < 1 || argv == nullptr || argv[0] == nullptr) {
    tell_user("capsa: error: the SPANK plugin cannot read the task's command");
    return failed;
  }
  try {
    const auto prefix = capsa::spank::task_exec_prefix(state.capsa, state.request, state.started_instance);
    for (const auto& name : state.request.env_names) {
      // A variable the job does not have leaves the image's value alone.
      const auto value = job_variable(sp, name);
      if (!value) continue;
      // capsa's injection: the job's value wins over the image's (PATH included).
      if (spank_setenv(sp, ("APPTAINERENV_" + name).c_str(), value->c_str(), 1) != ESPANK_SUCCESS) {
        tell_user("capsa: error: --container-env: the SPANK plugin cannot pass " + name);
        return failed;
      }
    }
    if (spank_setenv(sp, "CAPSA_SPANK_EXEC", capsa::spank::encode_words(prefix).c_str(), 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, "CAPSA_SPANK_ARGV0", argv[0], 1) != ESPANK_SUCCESS) {
      tell_user("capsa: error: the SPANK plugin cannot set the task's environment");
      return failed;
    }
  } catch (const std::exception& e) {
    tell_user(std::string("capsa: error: ") + e.what());
    return failed;
  }
  // The task's argv array is Slurm's and cannot grow: its first word is replaced by the
  // helper, which puts `capsa exec ... instance://` and the original first word back.
  argv[0] = ::strdup(state.helper.c_str());
  return ok;
}

// Once the last task of the node has exited, before Slurm kills what is left of the step
// (proctrack/linuxproc signals every descendant of slurmstepd, `capsa instance stop`
// included, once the tasks are gone).
int slurm_spank_task_exit(spank_t sp, int /*ac*/, char** /*av*/) {
  if (spank_context() != S_CTX_REMOTE || state.started_instance.empty()) return ok;
  int status = 0;
  if (!item(sp, S_TASK_EXIT_STATUS, &status) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    state.task_failed = true;
  uint32_t local_tasks = 0;
  if (!item(sp, S_JOB_LOCAL_TASK_COUNT, &local_tasks)) return ok;
  if (++state.exited_tasks >= local_tasks) {
    save_container();
    stop_instance();
  }
  return ok;
}

// Should task_exit not have stopped it (a task that never started).
int slurm_spank_exit(spank_t /*sp*/, int /*ac*/, char** /*av*/) {
  if (spank_context() == S_CTX_REMOTE) stop_instance();
  return ok;
}

int slurm_spank_job_epilog(spank_t sp, int /*ac*/, char** /*av*/) {
  uint32_t job_id = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  if (!item(sp, S_JOB_ID, &job_id) || !item(sp, S_JOB_UID, &uid) || !item(sp, S_JOB_GID, &gid)) return ok;
  const auto user_dir = capsa::spank::user_state_dir(state.state_dir, uid, false);  // root makes nothing
  if (user_dir.empty()) return ok;
  const auto dir = capsa::spank::named_job_dir(user_dir, host_name(), std::to_string(job_id));
  if (!capsa::is_own_directory(dir, uid)) return ok;
  // As the user: nothing the user could not remove is removed.
  const auto result = capsa::spank::run_as_user({{"/bin/rm", "-rf", "--one-file-system", dir}, {}, uid, gid});
  if (result.exit_code != 0)
    slurm_error("capsa: removing %s: %s", dir.c_str(), capsa::spank::last_line(result.output, "failed").c_str());
  return ok;
}

}  // extern "C"
