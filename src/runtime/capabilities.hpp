#pragma once
// Apptainer's privilege flags: --no-privs, --keep-privs, --drop-caps and --add-caps. Root
// (outside a user namespace) keeps every capability by default, as Apptainer's default
// `root default capabilities = full`; anyone else has none after exec anyway, so for them
// only the bounding set changes (what no later exec may gain).
#include <string>
#include <vector>

namespace capsa::runtime {

struct CapabilityRequest {
  bool no_privs = false;          // --no-privs: start from no capability
  bool keep_privs = false;        // --keep-privs: root keeps all (the default here)
  std::vector<std::string> add;   // --add-caps, root only (with --no-privs: the ones kept)
  std::vector<std::string> drop;  // --drop-caps

  bool any() const { return no_privs || keep_privs || !add.empty() || !drop.empty(); }
};

// Capability numbers for names as Apptainer takes them ("CAP_NET_RAW", "net_raw", any
// case; "ALL"). Throws Error naming one libcap does not know.
std::vector<int> capability_numbers(const std::vector<std::string>& names);

// Checks the request before anything is mounted: --keep-privs is root's; every name must
// be known. --add-caps from anyone else is granted in the container's user namespace (as
// ambient capabilities), as Apptainer grants it without its setuid starter: capability.json
// (`capsa capability add`) is enforced only where capabilities on the host are at stake,
// which needs a setuid helper capsa does not have.
void check_capabilities(const CapabilityRequest& request, bool privileged);

// Call last before exec, while the process still holds its capabilities: removes what the
// request drops from the bounding, inheritable and ambient sets (and the effective and
// permitted ones), so that the command's exec cannot gain it back.
void apply_capabilities(const CapabilityRequest& request);

}  // namespace capsa::runtime
