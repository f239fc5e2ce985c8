#include "cache/location.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "util/error.hpp"

namespace capsa::cache {

std::optional<std::string> process_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

namespace {

std::string home_directory(const EnvLookup& env) {
  if (auto home = env("HOME")) return *home;
  // Batch systems sometimes start jobs without HOME; the password database still knows.
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr && entry->pw_dir != nullptr && *entry->pw_dir)
    return entry->pw_dir;
  throw Error("cannot find a cache directory: HOME is not set and uid " + std::to_string(::getuid()) +
              " has no home directory; set CAPSA_CACHEDIR");
}

}  // namespace

CacheLocation resolve_cache_location(const EnvLookup& env) {
  if (auto dir = env("CAPSA_CACHEDIR")) return {*dir, "CAPSA_CACHEDIR"};
  // Apptainer keeps its cache in $APPTAINER_CACHEDIR/cache/<type> (blob, oci-tmp, ...);
  // `capsa` is one more type directory there, which Apptainer's own `cache clean` leaves
  // alone, and a site that points APPTAINER_CACHEDIR at scratch moves capsa's cache too.
  for (const char* name : {"APPTAINER_CACHEDIR", "SINGULARITY_CACHEDIR"})
    if (auto dir = env(name)) return {*dir + "/cache/capsa", name};
  return {home_directory(env) + "/.capsa/cache", "default"};
}

}  // namespace capsa::cache
