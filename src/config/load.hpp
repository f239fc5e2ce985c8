#pragma once
// Which configuration a run of capsa uses. The administrator's file is
// PREFIX/etc/capsa/capsa.conf, found as capsa finds its other files (util/install_layout.hpp:
// beside the running binary's prefix first, then the configured sysconfdir). -c/--config
// FILE (or CAPSA_CONFIG, APPTAINER_CONFIG_FILE, SINGULARITY_CONFIG_FILE) names another.
// For root that file replaces the administrator's, as Apptainer's --config does. For
// anyone else capsa reads both: the user's file may change what it likes, but no
// restriction of the administrator's is loosened (site_config.hpp, tighten).
#include <string>
#include <vector>

#include "config/site_config.hpp"

namespace capsa::config {

// The administrator's file: the first candidate that exists, else "" (capsa then uses
// Apptainer's defaults).
std::string system_config_path();

// The configuration for this run. `chosen` is the -c/--config (or environment) file, ""
// for none; `root` whether the caller is root. Warnings (unknown directives) are added to
// `warnings`; a malformed file, a missing chosen one, or an administrator's file that
// exists but cannot be read is an Error.
SiteConfig load_site_config(const std::string& chosen, bool root, std::vector<std::string>* warnings);

}  // namespace capsa::config
