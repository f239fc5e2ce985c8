#pragma once
// Running an action in an image that has no /bin/sh (distroless, a lone static binary).
// Apptainer never needs the image's shell: it interprets its action script in-process
// (§3.3). capsa does the part of that work such images need, in-process too:
//  * the environment: the action script's rules, applied leniently
//    (action_in_process.hpp environment_without_shell);
//  * run: a Docker runscript (the one with `eval "set ${SINGULARITY_OCI_RUN}"`) is
//    resolved from its OCI_ENTRYPOINT and OCI_CMD with Docker's rules; any other
//    runscript is executed directly (it needs its own interpreter);
//  * test: /.singularity.d/test when present, else success; shell: $APPTAINER_SHELL or
//    /bin/bash, else an error;
//  * the command is looked up in the container's PATH, with Apptainer's message when
//    it is not there.
// Everything reads the container's root, so this runs after pivot_root.
#include <string>
#include <vector>

#include "runtime/environment.hpp"
#include "runtime/shell_words.hpp"

namespace capsa::runtime {

// The argv of `action` (exec, run, shell, test) with `args`; empty when the action has
// nothing to run (test without a test script). Throws Error when it cannot run.
std::vector<std::string> action_argv_without_shell(const std::string& action, const std::vector<std::string>& args,
                                                   const EnvMap& env, const std::string& root = "/");

// Where `command` is found with the container's PATH, as execvp would find it. Throws
// StatusError 127 with Apptainer's wording ("\"CMD\": executable file not found in
// $PATH") when it is not there.
std::string find_command(const std::string& command, const EnvMap& env);

}  // namespace capsa::runtime
