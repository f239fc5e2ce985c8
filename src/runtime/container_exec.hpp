#pragma once
// The last step of every container start, and of a join of an instance: the action (the
// command, the runscript, a shell, the test or start script) executed inside, through the
// action script (action_script.hpp) or, where that is known to give the same result,
// directly (action_in_process.hpp, action_without_shell.hpp).
#include "image/image_files.hpp"
#include "runtime/environment.hpp"
#include "runtime/launch.hpp"

namespace capsa::runtime {

// How the container was entered: made by this start, or joined (`exec instance://NAME`),
// whose libraries bound at the instance's start (--nv, --rocm, --containlibs) end the
// command's LD_LIBRARY_PATH whatever the join's own flags.
enum class Entry { started, joined };

// Never returns but by exec; throws StatusError/SystemError when the command cannot run.
// The environment files are read through `environment_files`.
[[noreturn]] void exec_in_container(const ActionRequest& r, const ComposedEnvironment& env,
                                    const image::ImageFiles& environment_files, Entry entry = Entry::started);

}  // namespace capsa::runtime
