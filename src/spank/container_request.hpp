#pragma once
// What a job step asked of the capsa SPANK plugin (docs/slurm-plugin.md): pyxis' option
// names and meanings, checked and turned into the `capsa` command lines the plugin runs.
// No Slurm header here, so that all of it can be unit-tested (tests/spank).
//
// Every function that checks user input throws RequestError with one line that names the
// option and what to do; the plugin prints it and fails the step.
#include <stdexcept>
#include <string>
#include <vector>

namespace capsa::spank {

struct RequestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One entry of --container-mounts=SRC[:DST[:ro|rw]],...
struct ContainerMount {
  std::string source;
  std::string destination;
  bool read_only = false;
  std::string bind_spec() const;  // capsa's -B value: SRC:DST[:ro]
};

struct ContainerRequest {
  std::string image;  // capsa's form: docker://..., oras://..., library://..., /path
  std::vector<ContainerMount> mounts;
  std::string workdir;
  std::string name;  // a named container, reused by later steps of the job
  bool writable = false;
  bool remap_root = false;
  std::vector<std::string> env_names;  // variables whose job value overrides the image's
  bool mount_home = true;
  // --container-save=PATH: the container's root is saved there as a SIF image once
  // the step has succeeded on the node; a relative PATH is the job's directory's.
  std::string save_path;
  // --container-entrypoint: each task runs through the image's runscript (for a Docker
  // image its ENTRYPOINT, the task's command as its arguments), `capsa run`, not `exec`.
  bool entrypoint = false;
  bool wanted() const { return !image.empty() || !name.empty(); }
};

// The options, as their names without the leading "--"; `value` is null for the flags.
// Throws RequestError for a bad value or an unknown option.
void apply_option(ContainerRequest& request, const std::string& option, const char* value);

// pyxis' image forms to capsa's: docker://[REGISTRY#]IMAGE[:TAG] (the '#' becomes '/'),
// a bare IMAGE[:TAG] or REGISTRY#IMAGE (docker://), oras://, library://, or an absolute
// path of a SIF or squashfs file.
std::string capsa_image(const std::string& value);
std::vector<ContainerMount> parse_mounts(const std::string& value);
std::vector<std::string> parse_env_names(const std::string& value);

// A named container's persistent layer (`--overlay DIR`): read-only unless --container-writable.
struct NamedState {
  std::string overlay_dir;
};

// `capsa instance start` of the step's container: the instance every task of the step on
// this node joins.
std::vector<std::string> instance_start_argv(const std::string& capsa, const ContainerRequest& request,
                                             const std::string& image, const std::string& instance,
                                             const NamedState* named);

// `capsa exec [--pwd DIR] instance://NAME` (`run` with --container-entrypoint), to which
// each task's own argv is appended.
std::vector<std::string> task_exec_prefix(const std::string& capsa, const ContainerRequest& request,
                                          const std::string& instance);

// --container-save's file: `path` itself when absolute, else relative to `job_dir` (the
// job's working directory, as pyxis reads it). Throws RequestError when there is none.
std::string save_target(const std::string& path, const std::string& job_dir);

// `capsa instance save NAME FILE`: the instance's root file system into FILE.
std::vector<std::string> instance_save_argv(const std::string& capsa, const std::string& instance,
                                            const std::string& file);

// The on/off options (writable, remap-root, mount-home, entrypoint) as the command line
// left them, "writable=0,remap-root=1,...". Slurm hands each option that was given to
// slurmstepd once, in its own order, so that of `--no-container-mount-home
// --container-mount-home` (or an inherited flag and the srun line's opposite) the last is
// lost there; srun, sbatch and salloc put this in the job's environment
// (CAPSA_SPANK_FLAGS) and slurmstepd applies it after the options. apply_flags ignores
// what it does not know.
std::string encode_flags(const ContainerRequest& request);
void apply_flags(ContainerRequest& request, const std::string& text);
// Likewise Slurm hands slurmstepd only the last value of an option given more than once
// (on one line, or inherited and given again): the lists as srun, sbatch or salloc
// gathered them travel as CAPSA_SPANK_MOUNTS (--container-mounts' syntax) and
// CAPSA_SPANK_ENV (--container-env's), "" for none, and replace the options' there.
std::string joined_mounts(const ContainerRequest& request);
std::string joined_env_names(const ContainerRequest& request);

// The prefix travels to the task helper (capsa-spank-task) in one variable: the words
// joined by newlines (no word may hold one: checked when the options are read).
std::string encode_words(const std::vector<std::string>& words);
std::vector<std::string> decode_words(const std::string& text);

// The helper's argv: the prefix, the task's original argv[0], then the rest of its argv.
std::vector<std::string> task_argv(const std::vector<std::string>& prefix, const std::string& argv0,
                                   const std::vector<std::string>& rest);

// The instance of a step: one per job step and node (each node keeps its own records).
std::string instance_name(unsigned long job_id, unsigned long step_id);

}  // namespace capsa::spank
