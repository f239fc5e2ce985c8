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
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/action_script.hpp"

namespace capsa::runtime {

// Where the environment files come from: by default the container's root, read like any
// file; launch passes a reader of the image itself when nothing is mounted over
// /.singularity.d, which spares an unprivileged start its round trips through FUSE.
struct EnvironmentFiles {
  // The names in a directory, nullopt when it is not one; a file's text, nullopt when it
  // is not a regular file. Paths are absolute in the container.
  std::function<std::optional<std::vector<std::string>>(const std::string& dir)> list;
  std::function<std::optional<std::string>(const std::string& path)> read;
};

// The final environment of `exec`, or nullopt with `why` set when a shell is needed.
// Reads the container's files below `root` ("/" once inside it), the environment files
// from `files` when given.
std::optional<EnvMap> exec_environment_in_process(const ActionScriptInput& input, std::string* why,
                                                  const std::string& root = "/",
                                                  const EnvironmentFiles* files = nullptr);

// Executes `args` (exec's command and arguments) with the environment above. Returns
// only when the shell has to do it, with `why` set; a command that is not there is left
// to the shell too, so every message and exit status stays the action script's.
void exec_in_process(const ActionScriptInput& input, const std::vector<std::string>& args, std::string* why,
                     const EnvironmentFiles* files = nullptr);

// Whether CAPSA_ACTION_SHELL asks for the action script every time.
bool action_shell_forced();

}  // namespace capsa::runtime
