// `capsa overlay create [--size MiB] [--sparse] [--fakeroot] [--create-dir DIR]... IMAGE`:
// Apptainer's command and flags (cmd/internal/cli/overlay_create.go), over
// image/overlay_create.hpp.
#include <memory>

#include "cli/commands.hpp"
#include "image/overlay_create.hpp"

namespace capsa::cli {
namespace {

struct OverlayCreateFlags {
  image::OverlayCreateOptions options;
  std::string image;
};

void add_create(CLI::App& overlay) {
  auto flags = std::make_shared<OverlayCreateFlags>();
  auto* cmd = overlay.add_subcommand(
      "create", "Create an ext3 overlay image file, or add an overlay partition to a SIF: create [FLAGS] IMAGE");
  cmd->add_option("-s,--size", flags->options.size_mib, "Size of the ext3 overlay in MiB (at least 64)")
      ->capture_default_str();
  cmd->add_flag("-S,--sparse", flags->options.sparse, "Create a sparse image file");
  cmd->add_flag("-f,--fakeroot", flags->options.fakeroot,
                "Make upper/ and work/ root's, for containers run with --fakeroot");
  cmd->add_option("--create-dir", flags->options.create_dirs, "Directory to create under upper/ (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("image", flags->image, "The new image file, or an existing SIF")->required();
  cmd->footer(
      "Use it with `capsa exec --overlay IMAGE ...` (writable; IMAGE:ro to share it read-only), or, for a "
      "SIF, `capsa exec --writable IMAGE ...`.");
  cmd->callback([flags] { image::create_overlay(flags->image, flags->options, now_for_images()); });
}

}  // namespace

void add_overlay_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("overlay", "Manage persistent overlay images");
  cmd->require_subcommand(1);
  add_create(*cmd);
}

}  // namespace capsa::cli
