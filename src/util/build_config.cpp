#include "util/build_config.hpp"

#include <unistd.h>

#include <cstdlib>

#include "capsa/version.hpp"
#include "util/install_layout.hpp"

namespace capsa {
namespace {

// A GNUInstallDirs folder under `prefix`: its configured full path when capsa runs from
// the configured prefix (or a build tree), else the same relative folder of the prefix the
// binary sits in now. A folder configured absolute (/etc for /usr) stays where it is.
std::string folder(const std::string& prefix, const char* relative, const char* full) {
  if (prefix.empty() || relative[0] == '/') return full;
  return prefix + "/" + relative;
}

// Where capsa mounts a container's session: runtime/launch.cpp (session_mount_point).
std::string session_directory() {
  if (const char* dir = std::getenv("CAPSA_SESSION_DIR"); dir && *dir) return dir;
  return "/tmp/.capsa-session-" + std::to_string(::getuid());
}

}  // namespace

std::vector<std::pair<std::string, std::string>> build_configuration() {
  std::string moved = relocated_prefix(running_executable());
  if (moved == CAPSA_INSTALL_PREFIX) moved.clear();
  const std::string prefix = moved.empty() ? CAPSA_INSTALL_PREFIX : moved;
  const std::string sysconfdir = moved.empty() ? CAPSA_FULL_SYSCONFDIR : prefix_sysconfdir(moved);
  const std::string localstatedir = folder(moved, CAPSA_REL_LOCALSTATEDIR, CAPSA_FULL_LOCALSTATEDIR);
  const std::string libexecdir = folder(moved, CAPSA_REL_LIBEXECDIR, CAPSA_FULL_LIBEXECDIR);
  const std::string confdir = sysconfdir + "/capsa";
  // The file capsa reads (config/load.cpp: the first that exists), else where it would be.
  std::string conf_file = confdir + "/capsa.conf";
  for (const std::string& candidate : config_candidates("capsa.conf"))
    if (::access(candidate.c_str(), F_OK) == 0) {
      conf_file = candidate;
      break;
    }
  return {
      {"PACKAGE_NAME", "capsa"},
      {"PACKAGE_VERSION", build_info::version},
      {"BUILDDIR", CAPSA_BUILDDIR},
      {"PREFIX", prefix},
      {"EXECPREFIX", prefix},
      {"BINDIR", folder(moved, CAPSA_REL_BINDIR, CAPSA_FULL_BINDIR)},
      {"SBINDIR", folder(moved, CAPSA_REL_SBINDIR, CAPSA_FULL_SBINDIR)},
      {"LIBEXECDIR", libexecdir},
      {"DATAROOTDIR", folder(moved, CAPSA_REL_DATAROOTDIR, CAPSA_FULL_DATAROOTDIR)},
      {"DATADIR", folder(moved, CAPSA_REL_DATADIR, CAPSA_FULL_DATADIR)},
      {"SYSCONFDIR", sysconfdir},
      {"SHAREDSTATEDIR", folder(moved, CAPSA_REL_SHAREDSTATEDIR, CAPSA_FULL_SHAREDSTATEDIR)},
      {"LOCALSTATEDIR", localstatedir},
      {"RUNSTATEDIR", folder(moved, CAPSA_REL_RUNSTATEDIR, CAPSA_FULL_RUNSTATEDIR)},
      {"INCLUDEDIR", folder(moved, CAPSA_REL_INCLUDEDIR, CAPSA_FULL_INCLUDEDIR)},
      {"DOCDIR", folder(moved, CAPSA_REL_DOCDIR, CAPSA_FULL_DOCDIR)},
      {"INFODIR", folder(moved, CAPSA_REL_INFODIR, CAPSA_FULL_INFODIR)},
      {"LIBDIR", folder(moved, CAPSA_REL_LIBDIR, CAPSA_FULL_LIBDIR)},
      {"LOCALEDIR", folder(moved, CAPSA_REL_LOCALEDIR, CAPSA_FULL_LOCALEDIR)},
      {"MANDIR", folder(moved, CAPSA_REL_MANDIR, CAPSA_FULL_MANDIR)},
      {"APPTAINER_CONFDIR", confdir},
      {"SESSIONDIR", session_directory()},
      // capsa has no plugins (Apptainer's are Go plugins built against Apptainer itself).
      {"PLUGIN_ROOTDIR", ""},
      {"APPTAINER_CONF_FILE", conf_file},
      // capsa never installs a setuid helper.
      {"APPTAINER_SUID_INSTALL", "0"},
  };
}

}  // namespace capsa
