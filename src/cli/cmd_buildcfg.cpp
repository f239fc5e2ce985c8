// `capsa buildcfg [KEY]`: the configured install folders as KEY=VALUE lines, or one value,
// as `apptainer buildcfg` prints them (util/build_config.hpp).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "util/build_config.hpp"
#include "util/error.hpp"

namespace capsa::cli {

void add_buildcfg_command(CLI::App& app) {
  auto key = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("buildcfg", "Show the folders capsa was configured with (KEY=VALUE), or one KEY's");
  cmd->add_option("key", *key, "One of the keys (PREFIX, SYSCONFDIR, LIBEXECDIR, ...): print only its value");
  cmd->callback([key] {
    const auto entries = build_configuration();
    if (key->empty()) {
      for (const auto& [name, value] : entries) std::cout << name << "=" << value << "\n";
      return;
    }
    for (const auto& [name, value] : entries)
      if (name == *key) {
        std::cout << value << "\n";
        return;
      }
    // Apptainer's words (buildconfig.go), with what to do.
    throw Error("buildcfg: no variable named \"" + *key + "\" (run `buildcfg` without one for the list)");
  });
}

}  // namespace capsa::cli
