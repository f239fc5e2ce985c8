#include "cli/site_config.hpp"

#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "cli/env_flags.hpp"
#include "cli/global_flags.hpp"
#include "config/load.hpp"
#include "util/log.hpp"

namespace capsa::cli {

std::string chosen_config_file() {
  if (!config_flag().empty()) return config_flag();
  if (const char* file = std::getenv("CAPSA_CONFIG"); file != nullptr && *file != '\0') return file;
  return env_value("CONFIG_FILE").value_or("");
}

const config::SiteConfig& site_config() {
  static std::optional<config::SiteConfig> loaded;
  if (!loaded) {
    std::vector<std::string> warnings;
    if (build_config_flag()) {
      // Apptainer's --build-config: its defaults (no file is read), less the default
      // binds, resolv.conf, the home and devpts, as for a build's container. For anyone
      // but root the administrator's restrictions still hold, as for -c.
      config::SiteConfig build;
      build.bind_paths.clear();
      build.config_resolv_conf = false;
      build.mount_home = false;
      build.mount_devpts = false;
      if (::geteuid() == 0) {
        loaded = build;
      } else {
        const config::SiteConfig system = config::load_site_config("", false, &warnings);
        loaded = config::tighten(build, system);
        loaded->origin = system.origin;  // what still restricts comes from there
      }
    } else {
      loaded = config::load_site_config(chosen_config_file(), ::geteuid() == 0, &warnings);
    }
    for (const std::string& warning : warnings) log::warning(warning);
    config::set_active_site_config(*loaded);
  }
  return *loaded;
}

}  // namespace capsa::cli
