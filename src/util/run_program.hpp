#pragma once
// Running programs in child processes (util/process.hpp): the argv array exec takes, a
// program started with its standard streams where the caller wants them, and a program
// run with pipes (stdin fed, stdout and stderr captured).
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/process.hpp"

namespace capsa {

// The null-terminated array exec(3) takes, pointing into `strings`, which must outlive
// it unchanged. One allocation.
std::vector<char*> exec_array(const std::vector<std::string>& strings);

struct Command {
  std::vector<std::string> argv{};                // argv[0] is looked up in PATH unless it holds a '/'
  std::string program{};                          // when set: executed instead of argv[0] (OCI hooks name both)
  std::optional<std::vector<std::string>> env{};  // the whole environment (K=V); none: the caller's
  // Made the child's standard input, output and error; -1: inherited.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // When set, the child gives up root for this uid and gid (no supplementary groups)
  // before it executes: root running a program over a file a user controls.
  std::optional<std::pair<uid_t, gid_t>> run_as{};
};

// Starts `command`. When it cannot be executed the child says so on its stderr
// ("capsa: error: cannot run NAME: why") and exits 127, as a shell does.
Process spawn(const Command& command, const ChildOptions& options = {});

// spawn, then wait.
ExitStatus run_to_end(const Command& command);

struct Captured {
  ExitStatus status;
  std::string out;
  std::string err;
};

struct CaptureLimits {
  std::chrono::milliseconds timeout{60000};  // until the program closes stdout and stderr
  std::size_t max_output = 1 << 20;          // kept of each stream; the rest is read and dropped
};

// Runs `command` with `input` on its stdin and its stdout and stderr captured (its own
// stream settings are replaced). The pipes are served together, so a program that fills
// one while capsa feeds another cannot deadlock; a program that exits without reading
// its input is no error (no SIGPIPE reaches capsa). One still running after the timeout
// is killed and reaped, and Error says so.
Captured run_captured(const Command& command, const std::string& input, const CaptureLimits& limits = {});

}  // namespace capsa
