#pragma once
// The /bin/sh program that turns the composed environment into the process's final one
// and starts the action, in the order Apptainer's action script uses
// (docs/environment.md; Apptainer's internal/pkg/util/fs/files/action_scripts.go):
//   1. the variables capsa passed in are set aside and unset (PWD, HOME, OPTIND, UID,
//      GID, APPTAINER_NAME/CONTAINER/INSTANCE, SINGULARITY_APPNAME/SHELL stay), so the
//      image's scripts see none of the host's values;
//   2. /.singularity.d/env/*.sh are sourced in name order; after 10-docker*.sh the
//      default PATH entries that are missing are appended, before 90-environment.sh an
//      unset PATH gets the default; right after 99-base.sh the injected variables are
//      exported (APPTAINERENV_*, --env, --env-file); 99-runtimevars.sh is replaced by the
//      PATH rules (SING_USER_DEFINED_PREPEND_PATH, _APPEND_PATH, _PATH). Images without
//      /.singularity.d/env source /environment. An image without 99-base.sh still gets
//      the injection, after its last script;
//   3. PREPEND_LD_LIBRARY_PATH / APPEND_LD_LIBRARY_PATH are applied;
//   4. the variables set aside come back where the image did not set them (a variable
//      the image set to "" is unset);
//   5. PS1 defaults to "Apptainer> " (forced through PROMPT_COMMAND for bash);
//   6. the action: exec, run, shell or test.
#include <string>
#include <vector>

#include "runtime/environment.hpp"

namespace capsa::runtime {

struct ActionScriptInput {
  std::string action;          // exec, run, shell, test
  const EnvMap* process;       // the environment the shell starts with (step 1 and 4)
  const EnvMap* injected;      // step 2
  bool gpu_libraries = false;  // --nv: /.singularity.d/libs ends LD_LIBRARY_PATH
  bool evaluate_injected = true;  // false with --no-eval: the values are taken literally
  // --runscript-timeout's watchdog (script_watchdog.hpp): the shell's descriptors, -1 for none.
  int deadline_reached_fd = -1;
  int deadline_go_fd = -1;
};

std::string action_script(const ActionScriptInput& input);

// Whether the variable stays in place while the image's scripts run (step 1).
bool kept_through_scripts(const std::string& name);

// The PATH entries Apptainer appends where an image's PATH lacks them, in order.
inline constexpr const char* kDefaultPathEntries[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                                      "/usr/bin",       "/sbin",           "/bin"};

}  // namespace capsa::runtime
