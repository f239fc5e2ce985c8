#include "config/load.hpp"

#include <sys/stat.h>

#include "util/install_layout.hpp"

namespace capsa::config {

std::string system_config_path() {
  for (const std::string& path : config_candidates("capsa.conf")) {
    struct stat st {};
    // Existing, readable or not: an unreadable administrator's file must not mean "no
    // restrictions", so it is read (and fails) rather than skipped.
    if (::stat(path.c_str(), &st) == 0) return path;
  }
  return "";
}

SiteConfig load_site_config(const std::string& chosen, bool root, std::vector<std::string>* warnings) {
  if (!chosen.empty() && root) {
    SiteConfig config = site_config_from(read_config(chosen, warnings));
    config.origin = chosen;
    return config;
  }
  const std::string system_path = system_config_path();
  SiteConfig system = system_path.empty() ? SiteConfig{} : site_config_from(read_config(system_path, warnings));
  system.origin = system_path;
  if (chosen.empty()) return system;
  SiteConfig user = site_config_from(read_config(chosen, warnings));
  SiteConfig config = tighten(user, system);
  config.origin = system_path.empty() ? chosen : chosen + " and " + system_path;
  return config;
}

}  // namespace capsa::config
