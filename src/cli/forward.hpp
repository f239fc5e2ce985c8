#pragma once
// The lean runner (`capsa`) handles only `exec|run|shell|test|run-help` of a local image
// and `instance` (which starts containers too, and needs nothing more);
// everything else goes, unchanged, to capsa-full. Two binaries because most of a
// container's start-up time was the dynamic loader: capsa-full needs libcurl and
// libarchive and, through them, about 40 shared libraries, which cost more CPU to load
// and relocate (about 6 ms) than everything else capsa does to start a container.
#include <string>
#include <vector>

namespace capsa::cli {

// Keeps argv for forward_to_full (called from the middle of a command's parsing).
void remember_arguments(char** argv);

// The action the arguments (program name excluded) ask for when it is the lean runner's
// own work (exec, run, shell, test, run-help, instance), else "". Global flags may come first.
std::string local_action(const std::vector<std::string>& args);

// Replaces this process with capsa-full, with the remembered argv (argv[0] unchanged,
// so `singularity`/`apptainer`/`run-singularity` keep their meaning).
[[noreturn]] void forward_to_full();

}  // namespace capsa::cli
