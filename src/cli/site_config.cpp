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
    loaded = config::load_site_config(chosen_config_file(), ::geteuid() == 0, &warnings);
    for (const std::string& warning : warnings) log::warning(warning);
    config::set_active_site_config(*loaded);
  }
  return *loaded;
}

}  // namespace capsa::cli
