// capsa-full: the whole command line. Parses flags, calls the engine, and turns any error
// into one line on stderr and a non-zero exit code. `capsa` itself is the lean runner
// (main_runner.cpp), which hands every command other than running a local image here.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "capsa/version.hpp"
#include "cli/commands.hpp"
#include "cli/global_flags.hpp"
#include "cli/invocation.hpp"
#include "cli/run_app.hpp"
#include "registry/credentials.hpp"
#include "util/environment_block.hpp"
#include "util/error.hpp"

namespace {

void add_help_command(CLI::App& app) {
  auto* help = app.add_subcommand("help", "Show help for a command: help [COMMAND [SUBCOMMAND]]");
  auto* words = new std::vector<std::string>();  // lives as long as the process
  help->add_option("command", *words, "The command to describe");
  help->callback([&app, words] {
    CLI::App* target = &app;
    for (const auto& word : *words) {
      CLI::App* sub = nullptr;
      try {
        sub = target->get_subcommand(word);
      } catch (const CLI::OptionNotFound&) {
        throw capsa::Error("help: unknown command \"" + word + "\"; see `" + app.get_name() + " --help`");
      }
      target = sub;
    }
    std::cout << target->help();
  });
}

// Commands of Apptainer 1.4 (cmd/internal/cli) that this version does not have: say so
// plainly instead of a parser error, so a job script fails with a message that explains
// itself. None of these can mean anything for capsa.
bool reject_unimplemented(const capsa::cli::Invocation& inv) {
  static const std::vector<std::pair<std::string, std::string>> never = {
      {"checkpoint", "it drives DMTCP, which Debian 12 does not package"},
      {"oci", "capsa runs OCI images by converting them to SIF; it has no runc-style OCI mode"},
      {"plugin", "Apptainer's plugins are Go shared objects built against Apptainer itself"},
  };
  const std::size_t first = capsa::cli::global_flag_words(inv.args);
  if (first >= inv.args.size()) return false;
  const std::string& command = inv.args[first];
  const char* name = inv.program_name.c_str();
  for (const auto& [refused, why] : never) {
    if (command != refused) continue;
    std::fprintf(stderr, "%s: error: '%s' is not supported (%s)\n", name, command.c_str(), why.c_str());
    return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything forks: a child forked without exec shows the environment block.
  capsa::hide_inherited_values(capsa::registry::kSecretEnvironmentVariables);
  capsa::cli::Invocation inv = capsa::cli::resolve_invocation(argc, argv);
  capsa::cli::hide_secret_arguments(argc, argv);
  CLI::App app{"capsa: run Singularity/Apptainer (SIF) and OCI containers on HPC clusters, unprivileged.",
               inv.program_name};
  app.require_subcommand(1);
  capsa::cli::add_global_flags(app);
  app.fallthrough(false);
  app.footer("Run '" + inv.program_name + " help COMMAND' for the flags of a command.\n"
             "Documentation: docs/capsa.md");
  app.set_version_flag("--version", capsa::cli::version_line(inv.program_name));

  capsa::cli::add_sif_command(app);
  capsa::cli::add_inspect_command(app);
  capsa::cli::add_version_command(app);
  capsa::cli::add_cache_command(app);
  capsa::cli::add_action_commands(app);
  capsa::cli::add_pull_command(app);
  capsa::cli::add_build_command(app);
  capsa::cli::add_buildcfg_command(app);
  capsa::cli::add_push_command(app);
  capsa::cli::add_delete_command(app);
  capsa::cli::add_search_command(app);
  capsa::cli::add_registry_command(app);
  capsa::cli::add_remote_command(app);
  capsa::cli::add_keyserver_command(app);
  capsa::cli::add_overlay_command(app);
  capsa::cli::add_config_command(app);
  capsa::cli::add_capability_command(app);
  capsa::cli::add_sign_command(app);
  capsa::cli::add_verify_command(app);
  capsa::cli::add_key_command(app);
  capsa::cli::add_instance_command(app);
  capsa::cli::add_instance_save_command(app);
  add_help_command(app);
  capsa::cli::add_completion_command(app);
  capsa::cli::add_man_pages_command(app);

  if (reject_unimplemented(inv)) return 1;
  return capsa::cli::run_app(app, inv);
}
