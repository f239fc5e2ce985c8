#pragma once
// Whether a process holds a descriptor on a file below a directory, from the links in
// /proc/PID/fd (readlink(2) there names the file without touching its file system, so
// it cannot block on a FUSE server that does not answer).
#include <sys/types.h>

#include <string>

namespace capsa {

// `dir` is an absolute path with symbolic links resolved (as realpath(3) gives it).
// False when the process has ended or its descriptors cannot be read.
bool has_files_open_under(pid_t pid, const std::string& dir);

}  // namespace capsa
