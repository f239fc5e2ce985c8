#pragma once
// capsa-full: the registry flags (registry_flags.hpp) and their environment variables as
// pull options.
#include "cli/registry_flags.hpp"
#include "pull/pull.hpp"

namespace capsa::cli {

// Sets the credentials, authfile, --docker-login and --nohttps of `options`. Throws
// Error for a username without a password (or the other way round) and for an --authfile
// that does not exist.
void apply_registry_flags(const RegistryFlags& flags, pull::PullOptions& options);

}  // namespace capsa::cli
