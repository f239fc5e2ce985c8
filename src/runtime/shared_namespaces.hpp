#pragma once
// --sharens: the containers one process starts with --sharens share their namespaces and
// image mount, as Apptainer's: the first starts a hidden instance (instance.hpp) named
// after that parent process, and every one of them joins it (join_container). The
// instance ends with the parent process, as an instance started in a Slurm step ends
// with the step.
#include "runtime/launch.hpp"

namespace capsa::runtime {

// The name of the shared instance of the containers started by process `parent`.
std::string shared_instance_name(pid_t parent);

// Starts the shared instance if this process's parent has none yet, then runs `request`
// in it. Never returns.
[[noreturn]] void launch_shared(const ActionRequest& request);

}  // namespace capsa::runtime
