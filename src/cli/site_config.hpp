#pragma once
// The administrator's configuration for this run of capsa (config/load.hpp), from the
// file -c/--config names, else CAPSA_CONFIG, else APPTAINER_CONFIG_FILE or
// SINGULARITY_CONFIG_FILE (Apptainer's --config reads CONFIG_FILE from the environment);
// with --build-config, Apptainer's build configuration instead.
#include <string>

#include "config/site_config.hpp"

namespace capsa::cli {

// The file chosen on the command line or in the environment, "" for none.
std::string chosen_config_file();

// The configuration of this run, read on first use; unknown directives are warned about
// once. Throws capsa::Error for a malformed file.
const config::SiteConfig& site_config();

}  // namespace capsa::cli
