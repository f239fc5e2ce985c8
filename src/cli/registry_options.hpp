#pragma once
// capsa-full: the registry flags (registry_flags.hpp) and their environment variables as
// pull options.
#include "cli/registry_flags.hpp"
#include "pull/pull.hpp"

namespace capsa::cli {

// The registry access the flags and their environment variables ask for. Throws Error for
// a username without a password (or the other way round) and for an --authfile that does
// not exist.
pull::RegistryAccess registry_access(const RegistryFlags& flags);

}  // namespace capsa::cli
