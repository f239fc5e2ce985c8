// `capsa instance save NAME FILE` (runtime/instance_save.hpp, the SPANK plugin's
// --container-save). capsa-full's only: writing a SIF needs the packer and libcrypto,
// which the lean runner, loaded at every container start, does without; the runner
// hands `instance save` over (forward.cpp).
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "runtime/instance_save.hpp"
#include "util/error.hpp"

namespace capsa::cli {

void add_instance_save_command(CLI::App& app) {
  CLI::App* instance = app.get_subcommand("instance");
  struct Flags {
    std::string name, file;
  };
  auto flags = std::make_shared<Flags>();
  auto* cmd = instance->add_subcommand(
      "save",
      "Save an instance's root file system (its image and what was written to it) as a squashfs image: save NAME FILE");
  cmd->add_option("name", flags->name, "The instance")->required();
  cmd->add_option("file", flags->file, "The image file to write (replaced when it exists)")->required();
  cmd->callback([flags] { runtime::save_instance(flags->name, flags->file); });
}

}  // namespace capsa::cli
