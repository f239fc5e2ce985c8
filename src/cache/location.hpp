#pragma once
// Where the cache lives: chosen from the environment the way Apptainer users expect.

#include <functional>
#include <optional>
#include <string>

namespace capsa::cache {

struct CacheLocation {
  std::string root;    // the capsa cache directory itself
  std::string source;  // what chose it: "CAPSA_CACHEDIR", "APPTAINER_CACHEDIR", ..., "default"
};

// Reads a variable; returns nullopt when unset or empty (empty means "unset", as in Apptainer).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The process environment (getenv).
std::optional<std::string> process_env(const std::string& name);

// In order:
//   $CAPSA_CACHEDIR                  -> that directory is the cache
//   $APPTAINER_CACHEDIR/cache/capsa  \  these name the *parent* of Apptainer's `cache/`,
//   $SINGULARITY_CACHEDIR/cache/capsa/  so capsa's entries sit beside Apptainer's types
//   $HOME/.capsa/cache                  (home from $HOME, else the password database)
// Throws capsa::Error when none can be determined (no HOME and no passwd entry).
CacheLocation resolve_cache_location(const EnvLookup& env = process_env);

}  // namespace capsa::cache
