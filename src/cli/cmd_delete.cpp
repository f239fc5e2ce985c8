// `capsa delete library://REF`: flags as `apptainer delete` (cmd/internal/cli/delete.go):
// asks "Are you sure ... [y/N]" unless --force, deletes the tag for --arch.
#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/library_access.hpp"
#include "library/delete_image.hpp"
#include "library/reference.hpp"
#include "sif/format.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct DeleteFlags {
  std::string reference;
  bool force = false;
  std::string arch;
  int timeout = 15;
  std::string library;
  bool nohttps = false;
};

// Apptainer's AskYNQuestion: y/yes or n/no (any case), an empty line or the end of input
// is the default, no; anything else is an error.
bool confirmed(const std::string& what, const std::string& arch) {
  std::cerr << "Are you sure you want to delete " << what << " (" << arch << ") [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) answer.clear();
  std::cerr << "\n";
  std::transform(answer.begin(), answer.end(), answer.begin(), [](unsigned char c) { return std::tolower(c); });
  while (!answer.empty() && std::isspace(static_cast<unsigned char>(answer.back())) != 0) answer.pop_back();
  if (answer == "y" || answer == "yes") return true;
  if (answer.empty() || answer == "n" || answer == "no") return false;
  throw Error("invalid answer \"" + answer + "\": answer y or n; nothing was deleted");
}

}  // namespace

void add_delete_command(CLI::App& app) {
  auto flags = std::make_shared<DeleteFlags>();
  auto* cmd = app.add_subcommand("delete", "Delete an image from a library (library://)");
  cmd->add_option("image", flags->reference, "library://[ENTITY/[COLLECTION/]]CONTAINER[:TAG]")->required();
  cmd->add_flag("-F,--force", flags->force, "Delete the image without asking")->envname("APPTAINER_FORCE");
  cmd->add_option("-A,--arch", flags->arch, "Architecture of the image to delete; default: this machine's")
      ->envname("APPTAINER_ARCH");
  cmd->add_option("-T,--timeout", flags->timeout,
                  "Seconds to wait for the library (Apptainer's flag; capsa "
                  "uses its own connect and stall limits)");
  cmd->add_option("--library", flags->library, "URL of the library to delete from (APPTAINER_LIBRARY)");
  cmd->add_flag("--nohttps,--no-https", flags->nohttps, "Reach a library named by host over plain http://");
  cmd->footer(
      "Deletes the tag (default latest) of the image for one architecture; other tags and\n"
      "architectures stay. The library is --library, APPTAINER_LIBRARY, the host in the\n"
      "reference, or the active remote (`capsa remote use`), with that remote's token.");
  cmd->callback([flags] {
    if (!library::is_library_reference(flags->reference))
      throw Error("cannot delete \"" + flags->reference + "\": only library:// images can be deleted");
    const library::LibraryReference ref = library::parse_library_reference(flags->reference);
    if (ref.digest) throw Error("delete takes a tag, not a digest: " + flags->reference);
    const std::string arch = flags->arch.empty() ? sif::host_arch_name() : flags->arch;
    const std::string what = ref.api_path();
    // Which library and token: resolved (and a bad configuration refused) before asking.
    auto api = library_api_for(ref, flags->library, flags->nohttps);
    if (!flags->force && !confirmed(what, arch)) return;
    library::delete_library_image(*api, ref, arch);
    log::info({"Image ", what, " (", arch, ") deleted."});
  });
}

}  // namespace capsa::cli
