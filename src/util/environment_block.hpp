#pragma once
// The environment block a process was started with. /proc/PID/environ shows that block,
// not the process's current variables, for as long as the process lives, and a child
// forked without exec shows its parent's: setenv, unsetenv and clearenv only change the
// pointers to it. A secret given in the environment (a registry password) stays readable
// there by anyone who may read /proc/PID/environ unless the bytes themselves are cleared.
#include <span>

namespace capsa {

// Zeroes the whole inherited block and clears the environment (a forked server that needs
// none of it).
void wipe_inherited_environment();

// For each variable in `names` whose value lies in the inherited block: keeps the value
// readable through getenv (a private copy) and zeroes its bytes in the block.
void hide_inherited_values(std::span<const char* const> names);

}  // namespace capsa
