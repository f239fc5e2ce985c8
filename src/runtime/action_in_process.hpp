#pragma once
// The action script's work (action_script.hpp) done in capsa's process, with the
// environment-file reader of env_script.hpp:
//  * `exec` in an image with /bin/sh: the environment the script would hand the command,
//    then the command itself is executed. Starting the shell, which reads every
//    environment file again through the image mount, took 0.5 ms as root and 2 ms
//    unprivileged of each container start (bench/start.sh). The result is the script's,
//    rule for rule; wherever that cannot be known for sure (a file the reader does not
//    understand, --nv needing the image's ldconfig, a command the shell alone would find)
//    the caller runs the script as before. CAPSA_ACTION_SHELL=1 always takes the shell.
//  * every action in an image without /bin/sh: the same rules, leniently.
#include <optional>
#include <string>
#include <vector>

#include "image/image_files.hpp"
#include "runtime/action_script.hpp"

namespace capsa::runtime {

// The environment files (/.singularity.d/env/*.sh, /environment) are read through `files`
// (image/image_files.hpp): the container's tree, or, from launch, the SIF itself when
// nothing is mounted over /.singularity.d, which spares an unprivileged start its round
// trips through FUSE. One that cannot be read needs the shell (exec), or is left out
// (without a shell).

// The final environment of `exec`, or nullopt with `why` set when a shell is needed.
// File tests in the environment files look below `root`.
std::optional<EnvMap> exec_environment_in_process(const ActionScriptInput& input, std::string* why,
                                                  const image::ImageFiles& files, const std::string& root = "/");

// The same for an image without /bin/sh: what only a shell could do is left out (a
// statement, or a whole `if` whose condition, the reader does not understand), all else
// follows the same rules, so an image gets one environment whether it has a shell or not.
EnvMap environment_without_shell(const ActionScriptInput& input, const image::ImageFiles& files,
                                 const std::string& root = "/");

// What `exec` of `args` (the command and its arguments) runs without the script: the
// program as the script's lookup finds it, and the environment above. nullopt with `why`
// set when the shell has to do it; a command that is not there is left to the shell too,
// so every message and exit status stays the action script's.
struct DirectExec {
  std::string program;
  EnvMap env;
};
std::optional<DirectExec> direct_exec(const ActionScriptInput& input, const std::vector<std::string>& args,
                                      std::string* why, const image::ImageFiles& files);

// Whether CAPSA_ACTION_SHELL asks for the action script every time.
bool action_shell_forced();

}  // namespace capsa::runtime
