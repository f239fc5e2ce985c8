// `capsa inspect`: the metadata an image carries in /.singularity.d, read from the SIF's
// squashfs partition without mounting it, or from a sandbox directory, by the same code
// (image/metadata.hpp). Flags and output as `apptainer inspect`.

#include <iostream>
#include <memory>

#include "archive/source.hpp"
#include "cli/commands.hpp"
#include "cli/global_flags.hpp"
#include "cli/registry_flags.hpp"
#include "image/metadata.hpp"

namespace capsa::cli {

void add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<image::InspectOptions>();
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("inspect", "Show an image's metadata (labels by default)");
  cmd->add_option("image", *path,
                  "SIF image or sandbox directory (or a docker://, oras://, library://, docker-archive:, "
                  "oci-archive:, oci: or http(s):// image, through the cache)")
      ->required();
  cmd->add_flag("-l,--labels", options->labels, "Show the labels");
  cmd->add_flag("-d,--deffile", options->deffile, "Show the definition file the image was built from");
  cmd->add_flag("-r,--runscript", options->runscript, "Show the runscript");
  cmd->add_flag("-s,--startscript", options->startscript, "Show the startscript");
  cmd->add_flag("-t,--test", options->test, "Show the test script");
  cmd->add_flag("-e,--environment", options->environment, "Show the environment scripts");
  cmd->add_flag("-H,--helpfile", options->helpfile, "Show the help text (%help)");
  cmd->add_flag("-j,--json", options->json, "Print JSON instead of text");
  cmd->add_flag("--all", options->all, "Show every section, as JSON");
  cmd->add_flag("--list-apps", options->list_apps, "List the SCIF apps (/scif/apps/NAME)");
  cmd->add_option("--app", options->app, "Show the sections of this SCIF app instead of the image's");
  cmd->footer(
      "Reads /.singularity.d straight from the image's squashfs partition (or the sandbox directory); "
      "nothing is mounted.");
  cmd->callback([=] {
    std::string image = *path;
    // An image that is not a file is pulled or converted into the cache first, as exec does.
    for (const char* scheme : {"docker://", "oras://", "library://", "http://", "https://"})
      if (image.starts_with(scheme))
        image = image_for_remote_reference(image, RegistryFlags{}, quiet_output(), false, "").sif;
    if (archive::is_local_source(image))
      image = image_for_remote_reference(image, RegistryFlags{}, quiet_output(), false, "").sif;
    image::Metadata metadata = image::read_metadata_at(image, *options);
    for (const auto& warning : metadata.warnings) std::cerr << "WARNING: " << warning << "\n";
    std::cout << image::format_inspect(metadata, *options);
  });
}

}  // namespace capsa::cli
