// `capsa search TERM`: flags as `apptainer search` (cmd/internal/cli/search.go).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/library_access.hpp"
#include "library/search.hpp"
#include "sif/format.hpp"

namespace capsa::cli {
namespace {

struct SearchFlags {
  std::string term;
  std::string library;
  std::string arch;
  bool signed_only = false;
};

}  // namespace

void add_search_command(CLI::App& app) {
  auto flags = std::make_shared<SearchFlags>();
  auto* cmd = app.add_subcommand("search", "Search a library (library://) for images");
  cmd->add_option("term", flags->term,
                  "What to look for in entity, collection and container names (3 characters "
                  "or more)")
      ->required();
  cmd->add_option("--library", flags->library, "URL of the library to search (APPTAINER_LIBRARY)");
  cmd->add_option("--arch", flags->arch, "Architecture of the images to list; default: this machine's")
      ->envname("APPTAINER_SEARCH_ARCH");
  cmd->add_flag("--signed", flags->signed_only, "List signed images only")->envname("APPTAINER_SEARCH_SIGNED");
  cmd->footer("The library is --library, APPTAINER_LIBRARY, or the active remote (`capsa remote use`).");
  cmd->callback([flags] {
    library::LibraryReference nowhere;  // a search names no image, so no host either
    nowhere.written = "search " + flags->term;
    auto api = library_api_for(nowhere, flags->library, false);
    const std::string arch = flags->arch.empty() ? sif::host_arch_name() : flags->arch;
    const auto found = library::search_library(*api, flags->term, arch, flags->signed_only);
    std::cout << library::format_search(found, flags->term, arch);
  });
}

}  // namespace capsa::cli
