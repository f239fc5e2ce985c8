// capsa: the lean runner. `exec|run|shell|test|run-help` of a SIF or sandbox are handled
// here, linked against the runtime only; anything else (pull, cache, sif, inspect,
// help, docker:// images) is handed to capsa-full (see forward.hpp for why).
#include "capsa/version.hpp"
#include "cli/commands.hpp"
#include "cli/forward.hpp"
#include "cli/global_flags.hpp"
#include "cli/invocation.hpp"
#include "cli/run_app.hpp"
#include "registry/credentials.hpp"
#include "util/environment_block.hpp"
#include "util/start_phases.hpp"

int main(int argc, char** argv) {
  capsa::phases::mark("main");
  // Before anything forks: a child forked without exec shows the environment block.
  capsa::hide_inherited_values(capsa::registry::kSecretEnvironmentVariables);
  capsa::cli::remember_arguments(argv);
  capsa::cli::Invocation inv = capsa::cli::resolve_invocation(argc, argv);
  const std::string action = capsa::cli::local_action(inv.args);
  if (action.empty()) capsa::cli::forward_to_full();
  CLI::App app{"capsa: run Singularity/Apptainer (SIF) and OCI containers on HPC clusters, unprivileged.",
               inv.program_name};
  app.require_subcommand(1);
  capsa::cli::add_global_flags(app);
  app.fallthrough(false);
  app.footer("Run '" + inv.program_name + " help COMMAND' for the flags of a command.\n"
             "Documentation: docs/capsa.md");
  // Only the command being run: setting up the flags of all five is a tenth of a
  // millisecond of every container start. `capsa --help` is capsa-full's.
  if (action == "instance")
    capsa::cli::add_instance_command(app);
  else
    capsa::cli::add_action_commands(app, action, &inv.args);
  return capsa::cli::run_app(app, inv);
}
