// `capsa push IMAGE.sif oras://REF|library://REF`: flags as `apptainer push`
// (cmd/internal/cli/push.go).
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/global_flags.hpp"
#include "cli/library_access.hpp"
#include "cli/refused_flags.hpp"
#include "cli/registry_options.hpp"
#include "library/push.hpp"
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
  std::string library;
};

const std::vector<RefusedFlag>& refused_push_flags() {
  static const std::vector<RefusedFlag> flags = {
      {"--docker-host", true, "capsa talks to registries, never to a Docker daemon"},
  };
  return flags;
}

push::PushOptions options_from(const PushFlags& f) {
  if (f.positionals.size() != 2) throw Error("push needs IMAGE.sif oras://REF|library://REF (see `capsa help push`)");
  push::PushOptions options;
  options.image = f.positionals[0];
  options.reference = f.positionals[1];
  options.registry = registry_access(f.registry);
  return options;
}

// Apptainer's `push IMAGE library://...`: the token of the library's remote is needed, and
// a signature by a trusted key unless --allow-unsigned.
void push_to_library(const PushFlags& f, Progress& progress) {
  library::LibraryPushOptions options;
  options.image = f.positionals[0];
  options.target = library::parse_push_target(f.positionals[1]);
  options.description = f.description;
  options.require_signature = !f.allow_unsigned;
  auto api = library_api_for(options.target.ref, f.library, f.registry.nohttps);
  if (!api->has_token())
    throw Error("pushing to the library at " + api->host() +
                " needs a token: log in with `capsa remote login` (after `capsa remote add NAME " + api->url() +
                "` and `capsa remote use NAME`)");
  const library::LibraryPushResult result = library::push_to_library(*api, options, progress);
  if (result.quota_used)
    std::cout << "\nLibrary storage: using " << format_bytes(*result.quota_used) << " out of "
              << (result.quota_total.value_or(0) == 0 ? "unlimited" : format_bytes(*result.quota_total)) << " quota\n";
  if (quiet_output()) return;
  std::string tags;
  for (const auto& tag : options.target.tags) tags += (tags.empty() ? "" : ",") + tag;
  const auto& ref = options.target.ref;
  std::cerr << "Pushed library://" << ref.entity << "/" << ref.collection << "/" << ref.container << ":" << tags << " ("
            << result.digest << ", " << result.architecture
            << (result.already_uploaded ? ", the library had the file already" : "")
            << (result.resent_parts > 0 ? ", " + std::to_string(result.resent_parts) + " part(s) sent again" : "")
            << ")\n";
}

}  // namespace

void add_push_command(CLI::App& app) {
  auto flags = std::make_shared<PushFlags>();
  auto* cmd = app.add_subcommand("push", "Upload a SIF image to a library (library://) or an OCI registry (oras://)");
  cmd->add_option("args", flags->positionals,
                  "IMAGE.sif oras://REGISTRY/REPOSITORY[:TAG]|library://ENTITY/COLLECTION/CONTAINER[:TAG[,TAG]]")
      ->required()
      ->expected(2);
  add_registry_flags(*cmd, flags->registry);
  cmd->add_flag("-U,--allow-unsigned", flags->allow_unsigned,
                "Do not require a signed image (library:// only; oras:// pushes never require one)")
      ->envname("APPTAINER_ALLOW_UNSIGNED");
  cmd->add_option("-D,--description", flags->description,
                  "Description of the image (library:// only; ignored for oras://)");
  cmd->add_option("--library", flags->library, "URL of the library to push to (APPTAINER_LIBRARY)");
  add_refused_flags(*cmd, refused_push_flags());
  cmd->footer(
      "The SIF becomes an OCI artifact as Apptainer writes it: one layer of media type\n"
      "application/vnd.sylabs.sif.layer.v1.sif; `capsa pull oras://REF` gets it back byte for byte.\n"
      "Credentials: `capsa registry login`, --docker-username/--docker-password,\n"
      "APPTAINER_DOCKER_USERNAME/_PASSWORD, ~/.docker/config.json. The tag appears only once\n"
      "the whole image is in the registry.\n"
      "library://: the image must be signed by a key you trust (`capsa sign`) unless\n"
      "--allow-unsigned; the token is the one of the library's remote (`capsa remote login`).\n"
      "It is uploaded in parts (a dropped connection resends one part), and the tags are set\n"
      "only once the library confirms the whole file by its sha256.");
  cmd->callback([flags] {
    const bool quiet = quiet_output();
    Progress progress(Progress::detect_mode(quiet, 2));
    install_interrupt_handlers();
    if (library::is_library_reference(flags->positionals.at(1))) {
      try {
        push_to_library(*flags, progress);
      } catch (const Error& e) {
        if (interrupt_signal() == 0) throw;
        std::cerr << "capsa: " << e.what() << "; no tag was set, run again\n";
        std::exit(128 + interrupt_signal());
      }
      return;
    }
    if (!flags->library.empty()) throw Error("--library is for library:// destinations, not " + flags->positionals[1]);
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
