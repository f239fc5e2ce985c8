#pragma once
// How capsa was called: `capsa`, `singularity`, `apptainer` (identical behaviour, so job
// scripts run unchanged) or `run-singularity` (a SIF's launch line: `run-singularity IMAGE ARGS`).
#include <string>
#include <vector>

namespace capsa::cli {

struct Invocation {
  std::string program_name;        // what --help shows: capsa, singularity or apptainer
  std::vector<std::string> args;   // arguments for the CLI parser, program name excluded
};

Invocation resolve_invocation(int argc, char** argv);

// Overwrites the value of --docker-password (and the -p/-P/--password of registry, keyserver,
// remote and key logins) in argv (which /proc/PID/cmdline shows
// to every user of the machine) once it has been copied into an Invocation.
void hide_secret_arguments(int argc, char** argv);

}  // namespace capsa::cli
