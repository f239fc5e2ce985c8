#pragma once
// Apptainer's capability.json (`capability add|drop|list`; docs/administration.md): the
// capabilities the administrator granted to users and groups, as Apptainer writes it,
// {"users": {NAME: [CAP_...]}, "groups": {NAME: [CAP_...]}}, tab-indented, an empty map
// left out. It lives beside capsa.conf (PREFIX/etc/capsa/capability.json).
#include <map>
#include <string>
#include <vector>

namespace capsa::config {

struct CapabilityConfig {
  std::map<std::string, std::vector<std::string>> users, groups;
};

// The file's path: beside the administrator's capsa.conf, else the first place one would be.
std::string capability_file_path();

// Parses the file's text ("" is an empty configuration). Throws Error naming `origin`.
CapabilityConfig parse_capability_config(const std::string& text, const std::string& origin);
// As Apptainer's encoder writes it: users before groups, tab indents, no final newline.
std::string capability_config_text(const CapabilityConfig& config);

// Every capability Apptainer knows, CAP_ names in order, each with a line saying what it allows.
struct KnownCapability {
  const char* name;
  const char* description;
};
const std::vector<KnownCapability>& known_capabilities();

// Apptainer's reading of a comma list: each name trimmed, upper-cased, given CAP_ when it
// lacks it; ALL is every known one. Known ones go to `known`, the rest to `unknown`, each once.
void split_capabilities(const std::string& list, std::vector<std::string>& known, std::vector<std::string>& unknown);

}  // namespace capsa::config
