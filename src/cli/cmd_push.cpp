// `capsa push IMAGE.sif oras://REF`: flags as `apptainer push` (cmd/internal/cli/push.go).
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/global_flags.hpp"
#include "cli/refused_flags.hpp"
#include "cli/registry_options.hpp"
#include "push/push.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct PushFlags {
  std::vector<std::string> positionals;
  RegistryFlags registry;
  bool allow_unsigned = false;
  std::string description;
};

const std::vector<RefusedFlag>& refused_push_flags() {
  static const std::vector<RefusedFlag> flags = {
      {"--library", true, "library:// is not in this version of capsa yet; push to oras://"},
      {"--docker-host", true, "capsa talks to registries, never to a Docker daemon"},
  };
  return flags;
}

push::PushOptions options_from(const PushFlags& f) {
  if (f.positionals.size() != 2) throw Error("push needs IMAGE.sif oras://REF (see `capsa help push`)");
  push::PushOptions options;
  options.image = f.positionals[0];
  options.reference = f.positionals[1];
  options.registry = registry_access(f.registry);
  return options;
}

}  // namespace

void add_push_command(CLI::App& app) {
  auto flags = std::make_shared<PushFlags>();
  auto* cmd = app.add_subcommand("push", "Upload a SIF image to an OCI registry as an oras:// artifact");
  cmd->add_option("args", flags->positionals, "IMAGE.sif oras://REGISTRY/REPOSITORY[:TAG]")->required()->expected(2);
  add_registry_flags(*cmd, flags->registry);
  cmd->add_flag("-U,--allow-unsigned", flags->allow_unsigned,
                "Do not require a signed image (library:// only; oras:// pushes never require one)");
  cmd->add_option("-D,--description", flags->description,
                  "Description of the image (library:// only; ignored for oras://)");
  add_refused_flags(*cmd, refused_push_flags());
  cmd->footer(
      "The SIF becomes an OCI artifact as Apptainer writes it: one layer of media type\n"
      "application/vnd.sylabs.sif.layer.v1.sif; `capsa pull oras://REF` gets it back byte for byte.\n"
      "Credentials: `capsa registry login`, --docker-username/--docker-password,\n"
      "APPTAINER_DOCKER_USERNAME/_PASSWORD, ~/.docker/config.json. The tag appears only once\n"
      "the whole image is in the registry.");
  cmd->callback([flags] {
    const bool quiet = quiet_output();
    Progress progress(Progress::detect_mode(quiet, 2));
    install_interrupt_handlers();
    if (!flags->description.empty()) log::warning("Description is not supported for push to oras. Ignoring it.");
    push::PushResult result;
    try {
      result = push::push(options_from(*flags), progress);
    } catch (const Error& e) {
      if (interrupt_signal() == 0) throw;
      std::cerr << "capsa: " << e.what() << "; the tag was not published, run again to resume\n";
      std::exit(128 + interrupt_signal());
    }
    if (!quiet)
      std::cerr << "Pushed oras://" << result.reference << " (" << result.manifest_digest
                << (result.layer_existed ? ", the registry already had the SIF" : "") << ")\n";
  });
}

}  // namespace capsa::cli
