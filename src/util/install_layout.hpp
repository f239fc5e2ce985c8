#pragma once
// Where capsa's installed pieces are. A site or a user may install capsa into any prefix
// (`cmake --install build --prefix DIR`) and move that prefix later, so every lookup tries
// the layout around the running binary first (DIR/bin/capsa, DIR/libexec/capsa/capsa-full,
// DIR/etc/capsa/...) and the paths compiled in at configure time after it.
#include <string>
#include <vector>

namespace capsa {

// The resolved path of the running program (/proc/self/exe), or "" when unknown.
std::string running_executable();

// The prefix the running binary sits in: DIR for DIR/bin/capsa or
// DIR/libexec/capsa/capsa-full; "" when the binary is elsewhere (a build tree).
std::string relocated_prefix(const std::string& executable);

// Candidate paths of the program NAME that lives in libexec/capsa: beside the running
// binary (a build tree, or a bin/ holding both), PREFIX/libexec/capsa/NAME of the running
// binary's prefix, then the configured libexec folder. Existing or not, in that order.
std::vector<std::string> libexec_candidates(const std::string& name);

// Where the prefix PREFIX keeps its configuration: PREFIX/etc, except /etc for the
// distribution's prefix /usr (as GNUInstallDirs, and where a .deb or .rpm puts it).
std::string prefix_sysconfdir(const std::string& prefix);

// Candidate paths of the configuration file NAME (capsa.conf, nvliblist.conf...):
// prefix_sysconfdir(PREFIX)/capsa/NAME of the running binary's prefix, then the configured
// sysconfdir/capsa/NAME. Existing or not, in that order.
std::vector<std::string> config_candidates(const std::string& name);

// The first of `candidates` that exists and can be read, or "".
std::string first_readable(const std::vector<std::string>& candidates);

}  // namespace capsa
