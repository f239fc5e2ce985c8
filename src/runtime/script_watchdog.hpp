#pragma once
// --runscript-timeout (APPTAINER_RUNSCRIPT_TIMEOUT; default one minute): Apptainer
// interprets the action script (the image's environment files, then the action's lines
// up to the command's exec) with a deadline, kills the command an environment file is
// running when it passes, and fails with `command "CMD" was killed after D timeout`,
// status 255. capsa's /bin/sh does that part here, so the deadline is kept by a watchdog:
// a small process capsa starts (two forks away, so that it is no child of the command)
// just before the shell is executed. The shell tells it
// when it reaches the action (a byte on one pipe) and goes on only once the watchdog
// answers (a line on another): past the deadline the watchdog never answers, interrupts
// the shell's children (SIGINT, then SIGKILL), says which command it stopped, and signals
// the shell (SIGALRM; both trapped to exit 255 until the action is reached). The runscript itself, once executed, has
// no deadline: the watchdog is gone by then.
#include <chrono>
#include <optional>

namespace capsa::runtime {

// The shell's ends of the two pipes: single-digit descriptors, left open across exec.
struct ScriptDeadline {
  int reached_fd = -1;  // the shell writes a byte here at the action
  int go_fd = -1;       // and reads the watchdog's answer here
};

// Apptainer's default when no --runscript-timeout is given.
inline constexpr std::chrono::minutes kDefaultScriptTimeout{1};

// Forks the watchdog for `limit`; nullopt (nothing forked) when no descriptor below 10 is
// free for the shell, which a POSIX shell's redirections need.
std::optional<ScriptDeadline> start_script_watchdog(std::chrono::nanoseconds limit);

}  // namespace capsa::runtime
