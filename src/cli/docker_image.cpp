// capsa-full: `exec docker://REF` pulls (or finds) the image in the cache first, as
// Apptainer does; the cached SIF is run.
#include "cli/commands.hpp"
#include "cli/env_flags.hpp"
#include "pull/pull.hpp"
#include "util/progress.hpp"

namespace capsa::cli {

std::string image_for_docker_reference(const std::string& reference, bool quiet) {
  pull::PullOptions pull_options;
  pull_options.reference = reference;
  pull_options.nohttps = env_flag("NOHTTPS");
  return pull::cached_sif_in_subprocess(pull_options, Progress::detect_mode(quiet, 2));
}

}  // namespace capsa::cli
