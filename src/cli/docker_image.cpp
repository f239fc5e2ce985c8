// capsa-full: `exec docker://REF` pulls (or finds) the image in the cache first, as
// Apptainer does; the cached SIF is run. With --disable-cache the image is pulled into a
// directory of its own that the run removes (runtime/temporary_image.hpp), and the cache
// is neither read nor written.
#include <unistd.h>

#include <vector>

#include "cache/cache.hpp"
#include "cli/commands.hpp"
#include "cli/registry_options.hpp"
#include "pull/pull.hpp"
#include "runtime/sandbox_run.hpp"
#include "runtime/temporary_image.hpp"
#include "util/error.hpp"
#include "util/progress.hpp"

namespace capsa::cli {
namespace {

std::string make_directory_in(const std::string& parent) {
  std::string pattern = parent + "/capsa-image-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr)
    throw_errno("creating a temporary directory for --disable-cache in " + parent);
  return buffer.data();
}

}  // namespace

RemoteImage image_for_remote_reference(const std::string& reference, const RegistryFlags& registry, bool quiet,
                                       bool disable_cache, const std::string& tmpdir) {
  pull::PullOptions pull_options;
  pull_options.reference = reference;
  pull_options.registry = registry_access(registry);
  const Progress::Mode progress = Progress::detect_mode(quiet, 2);
  if (!disable_cache) {
    std::string sif = pull::cached_sif_in_subprocess(pull_options, progress);
    // The container holds the entry in use (a descriptor it inherits), so that a
    // `cache clean` meanwhile keeps the image it runs from.
    cache::hold_across_exec(sif);
    return {sif, ""};
  }
  const std::string parent = runtime::temporary_parent(tmpdir);
  RemoteImage image;
  image.temporary_directory = make_directory_in(parent);
  image.sif = image.temporary_directory + "/image.sif";
  pull_options.output = image.sif;
  pull_options.disable_cache = true;
  pull_options.tmpdir = parent;
  try {
    pull::pull_in_subprocess(pull_options, progress);
  } catch (...) {
    runtime::remove_sandbox(image.temporary_directory, runtime::RootMode::fakeroot_emulated);
    throw;
  }
  return image;
}

}  // namespace capsa::cli
