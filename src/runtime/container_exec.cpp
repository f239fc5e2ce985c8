#include "runtime/container_exec.hpp"

#include <dirent.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "runtime/action_in_process.hpp"
#include "runtime/action_script.hpp"
#include "runtime/action_without_shell.hpp"
#include "runtime/script_watchdog.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/run_program.hpp"
#include "util/start_phases.hpp"

namespace capsa::runtime {
namespace {

// execve with the container's rules; returns (errno set) only when it failed. Nothing the
// container runs may gain privileges (setuid binaries in the image included), unless
// root allowed setuid programs.
void execute(const std::string& program, const std::vector<std::string>& argv_strings, const EnvMap& env,
             bool allow_setuid) {
  const std::vector<std::string> envp_strings = to_envp(env);
  const std::vector<char*> argv = exec_array(argv_strings), envp = exec_array(envp_strings);
  if (!allow_setuid) ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  phases::mark("exec");
  ::execve(program.c_str(), argv.data(), envp.data());
}

// The image has no /bin/sh: the environment and the action are worked out in-process
// (action_in_process.hpp, action_without_shell.hpp) and the command is executed directly.
[[noreturn]] void exec_without_shell(const ActionRequest& r, const ActionScriptInput& input,
                                     const image::ImageFiles& files) {
  EnvMap process = environment_without_shell(input, files);
  std::vector<std::string> argv_strings = action_argv_without_shell(r.action, r.args, process);
  if (argv_strings.empty()) {  // `test` without a test script passes, as in Apptainer; so does `start`
    if (r.action == "test") log::info("no test script in this container");
    std::exit(0);
  }
  std::string program = find_command(argv_strings[0], process);
  execute(program, argv_strings, process, setuid_allowed(r));
  int err = errno;
  if (err == ENOENT)  // the file is there (find_command saw it): its #! interpreter is not
    throw StatusError("\"" + argv_strings[0] + "\": its interpreter is not in the image", 127);
  throw StatusError("\"" + argv_strings[0] + "\": " + std::strerror(err), 126);
}

// Whether /.singularity.d/libs holds anything (a library bound at the container's start).
bool libraries_bound() {
  DIR* dir = ::opendir("/.singularity.d/libs");
  if (dir == nullptr) return false;
  bool found = false;
  while (const dirent* entry = ::readdir(dir))
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) found = true;
  ::closedir(dir);
  return found;
}

}  // namespace

[[noreturn]] void exec_in_container(const ActionRequest& r, const ComposedEnvironment& env,
                                    const image::ImageFiles& environment_files, Entry entry) {
  const bool bound_libraries =
      r.nv || r.nvccli || r.rocm || !r.libraries.empty() || (entry == Entry::joined && libraries_bound());
  const ActionScriptInput script_input{r.action, &env.process, &env.injected, bound_libraries, !r.no_eval};
  if (::access("/bin/sh", X_OK) != 0) exec_without_shell(r, script_input, environment_files);
  if (r.action == "exec") {
    std::string why;
    if (std::optional<DirectExec> direct = direct_exec(script_input, r.args, &why, environment_files)) {
      execute(direct->program, r.args, direct->env, setuid_allowed(r));
      why = "executing " + direct->program + ": " + std::strerror(errno);  // the script may still run it
    }
    log::debug({"the action runs through /bin/sh: ", why});
  }
  ActionScriptInput shell_input = script_input;
  phases::mark("watchdog");  // to the exec: the watchdog's fork (bench/start.sh)
  if (auto deadline = start_script_watchdog(r.runscript_timeout.value_or(kDefaultScriptTimeout))) {
    shell_input.deadline_reached_fd = deadline->reached_fd;
    shell_input.deadline_go_fd = deadline->go_fd;
  }
  std::vector<std::string> argv_strings = {"/bin/sh", "-c", action_script(shell_input), r.action};
  argv_strings.insert(argv_strings.end(), r.args.begin(), r.args.end());
  execute("/bin/sh", argv_strings, env.process, setuid_allowed(r));
  throw_errno("running /bin/sh in the container");
}

}  // namespace capsa::runtime
