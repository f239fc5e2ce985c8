#pragma once
// `capsa buildcfg`: the folders this capsa was configured to install into, named as
// Apptainer's `buildcfg` names its own (cmd/internal/cli/buildconfig.go), so that site
// scripts that ask `singularity buildcfg SYSCONFDIR` get capsa's answer. A prefix that
// was moved (install_layout.hpp) answers with where it is now, not where it was built for.
#include <string>
#include <utility>
#include <vector>

namespace capsa {

// KEY, VALUE in Apptainer's order: PACKAGE_NAME, PACKAGE_VERSION, BUILDDIR, PREFIX, ...,
// APPTAINER_CONFDIR, SESSIONDIR, PLUGIN_ROOTDIR, APPTAINER_CONF_FILE, APPTAINER_SUID_INSTALL.
std::vector<std::pair<std::string, std::string>> build_configuration();

}  // namespace capsa
