#pragma once
// `exec` without the image's /bin/sh: the environment the action script
// (action_script.hpp) would hand the command, worked out in-process with the strict
// environment-file reader (env_script.hpp), then the command itself is executed.
// Starting the shell, which reads every environment file again through the image mount,
// took 0.5 ms as root and 2 ms unprivileged of each container start (bench/start.sh).
//
// The result is the action script's, rule for rule; wherever that cannot be known for
// sure (a file the reader does not understand, --nv needing the image's ldconfig, a
// command the shell alone would find) the caller runs the action script as before.
// CAPSA_ACTION_SHELL=1 always takes the shell.
#include <optional>
#include <string>
#include <vector>

#include "runtime/action_script.hpp"

namespace capsa::runtime {

// The final environment of `exec`, or nullopt with `why` set when a shell is needed.
// Reads the container's files below `root` ("/" once inside it).
std::optional<EnvMap> exec_environment_in_process(const ActionScriptInput& input, std::string* why,
                                                  const std::string& root = "/");

// Executes `args` (exec's command and arguments) with the environment above. Returns
// only when the shell has to do it, with `why` set; a command that is not there is left
// to the shell too, so every message and exit status stays the action script's.
void exec_in_process(const ActionScriptInput& input, const std::vector<std::string>& args, std::string* why);

// Whether CAPSA_ACTION_SHELL asks for the action script every time.
bool action_shell_forced();

}  // namespace capsa::runtime
