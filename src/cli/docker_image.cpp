// capsa-full: `exec docker://REF` pulls (or finds) the image in the cache first, as
// Apptainer does; the cached SIF is run.
#include "cache/cache.hpp"
#include "cli/commands.hpp"
#include "cli/registry_options.hpp"
#include "pull/pull.hpp"
#include "util/progress.hpp"

namespace capsa::cli {

std::string image_for_remote_reference(const std::string& reference, const RegistryFlags& registry, bool quiet) {
  pull::PullOptions pull_options;
  pull_options.reference = reference;
  pull_options.registry = registry_access(registry);
  std::string sif = pull::cached_sif_in_subprocess(pull_options, Progress::detect_mode(quiet, 2));
  // The container holds the entry in use (a descriptor it inherits), so that a
  // `cache clean` meanwhile keeps the image it runs from.
  cache::hold_across_exec(sif);
  return sif;
}

}  // namespace capsa::cli
