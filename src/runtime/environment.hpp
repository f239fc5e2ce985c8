#pragma once
// The environment a container's process starts with, composed as Apptainer does
// (docs/environment.md): the host's variables (or almost none with
// --cleanenv), HOME and a default PATH, the APPTAINER_/SINGULARITY_ variables that
// describe the container, and the variables the user injects (APPTAINERENV_X,
// SINGULARITYENV_X, --env, --env-file), which are applied after the image's own
// environment scripts so that they win.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace capsa::runtime {

using EnvMap = std::map<std::string, std::string>;

struct EnvRequest {
  EnvMap host;                       // the caller's environment
  bool clean = false;                // --cleanenv / --containall
  std::vector<std::string> env_args; // --env K=V (with two '=' or more, a CSV list of them; "..." protects commas)
  std::vector<std::string> env_files;// --env-file paths (contents: K=V lines)
  std::string home;                  // HOME inside
  std::string image_path;            // absolute path of the image
  std::string command;               // exec, run, shell, test
  std::string binds;                 // APPTAINER_BIND value for nested runs
};

struct ComposedEnvironment {
  EnvMap process;   // what the process starts with
  EnvMap injected;  // applied after the image's 99-base.sh; PATH, PREPEND_PATH and APPEND_PATH
                    // arrive as SING_USER_DEFINED_*, which the runtime-variables step applies
  std::vector<std::string> warnings;
};

ComposedEnvironment compose_environment(const EnvRequest& request);

// The NAME=VALUE assignments of an --env-file's text, in order: blank lines and `#`
// comments skipped, an `export ` prefix and one pair of matching quotes around the value
// removed, nothing evaluated. Throws Error naming `from` for a line that is not
// NAME=VALUE or whose NAME is not a valid variable name.
std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text, const std::string& from);

// `export K="V"` lines for the injected variables: evaluated once inside the container,
// as Apptainer does without --no-eval; LD_LIBRARY_PATH gets /.singularity.d/libs appended.
std::string injection_script(const EnvMap& injected, bool evaluate = true);

EnvMap current_environment();
std::vector<std::string> to_envp(const EnvMap& env);

}  // namespace capsa::runtime
