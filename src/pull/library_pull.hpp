#pragma once
// `pull library://REF` and `exec library://REF`: the image's record from the library, the
// SIF itself into the cache (by its sha256, verified), then to the output. pull.cpp hands
// library:// references here.
#include <optional>
#include <string>

#include "pull/pull.hpp"

namespace capsa::pull {

std::string library_output_path(const PullOptions& options);
PullResult pull_library(const PullOptions& options, Progress& progress);
std::string cached_library_sif(const PullOptions& options, Progress& progress);

// A directory for --disable-cache's private cache under `tmpdir`, else $TMPDIR, else /var/tmp.
std::string make_private_cache_root(const std::optional<std::string>& tmpdir);

}  // namespace capsa::pull
