// `capsa capability add|drop|list|avail` (alias `caps`): Apptainer's capability command
// (cmd/internal/cli/capability_linux.go) on capability.json beside capsa.conf
// (config/capability_file.hpp), with Apptainer's words. add and drop are root's.
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/env_flags.hpp"
#include "config/capability_file.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct CapabilityFlags {
  std::string user, group, caps, name;
};

std::string joined(const std::vector<std::string>& list, const char* separator = ",") {
  std::string out;
  for (const std::string& item : list) out += (out.empty() ? "" : separator) + item;
  return out;
}

// The file's text; `must_exist` false reads a missing file as empty (add creates it).
std::string read_capability_file(const std::string& path, bool must_exist, const std::string& doing) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!must_exist && errno == ENOENT) return "";
    throw Error(doing + ": while opening capability config file: " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

config::CapabilityConfig load(const std::string& path, bool must_exist, const std::string& doing) {
  try {
    return config::parse_capability_config(read_capability_file(path, must_exist, doing), path);
  } catch (const Error& e) {
    throw Error(doing + ": " + e.what());
  }
}

void save(const std::string& path, const config::CapabilityConfig& config) {
  const std::string text = config::capability_config_text(config);
  AtomicFile file(path, 0644);
  write_all(file.fd(), {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  file.commit();
}

void add_caps(std::vector<std::string>& list, const std::vector<std::string>& caps, const std::string& who, bool user) {
  for (const std::string& cap : caps) {
    if (std::find(list.begin(), list.end(), cap) != list.end()) {
      log::warning({"Won't add capability '", cap, "', already assigned to ", who});
      continue;
    }
    list.push_back(cap);
    if (user) {  // Apptainer's warnings, user grants only
      log::warning({"Adding '", cap, "' capability will likely allow ", who, " to escalate privilege on the host"});
      log::warning(
          {"Use 'capsa capability drop --user ", who.substr(5), " ", cap, "' to reverse this action if necessary"});
    }
  }
}

// Removes `caps` from map[name]; the entry goes when empty. Throws when it has none.
void drop_caps(std::map<std::string, std::vector<std::string>>& map, const std::string& name,
               const std::vector<std::string>& caps, const std::string& kind) {
  auto entry = map.find(name);
  if (entry == map.end()) throw Error(kind + " '" + name + "' doesn't have any capability assigned");
  for (const std::string& cap : caps) {
    auto at = std::find(entry->second.begin(), entry->second.end(), cap);
    if (at == entry->second.end())
      log::warning({"Won't drop capability '", cap, "', not assigned to ", kind, " ", name});
    else
      entry->second.erase(at);
  }
  if (entry->second.empty()) map.erase(entry);
}

void manage(const CapabilityFlags& f, bool add) {
  const std::string doing = add ? "Unable to add capabilities" : "Unable to drop capabilities";
  if (::getuid() != 0) throw Error(doing + ": only root user can manage capabilities");
  const std::string path = config::capability_file_path();
  config::CapabilityConfig config = load(path, false, doing);
  std::vector<std::string> caps, unknown;
  config::split_capabilities(f.caps, caps, unknown);
  if (!unknown.empty()) log::warning("Ignoring unknown capabilities: " + joined(unknown, " "));
  const std::string user = !f.user.empty() ? f.user : env_value("CAP_USER").value_or("");
  const std::string group = !f.group.empty() ? f.group : env_value("CAP_GROUP").value_or("");
  if (user.empty() && group.empty()) throw Error(doing + ": no user or group specified (give --user or --group)");
  if (!user.empty()) {
    if (::getpwnam(user.c_str()) == nullptr)
      throw Error(doing + ": while setting capabilities for user " + user + ": user does not exist");
    if (add)
      add_caps(config.users[user], caps, "user " + user, true);
    else
      drop_caps(config.users, user, caps, "user");
  }
  if (!group.empty()) {
    if (::getgrnam(group.c_str()) == nullptr)
      throw Error(doing + ": while setting capabilities for group " + group + ": group does not exist");
    if (add)
      add_caps(config.groups[group], caps, "group " + group, false);
    else
      drop_caps(config.groups, group, caps, "group");
  }
  save(path, config);
}

void list(const CapabilityFlags& f) {
  const std::string doing = "Unable to list capabilities";
  const config::CapabilityConfig config = load(config::capability_file_path(), true, doing);
  std::string out;
  auto print = [&out](const std::map<std::string, std::vector<std::string>>& map, const std::string& name,
                      const char* kind) {
    auto entry = map.find(name);
    if (entry != map.end() && !entry->second.empty()) out += name + " [" + kind + "]: " + joined(entry->second) + "\n";
  };
  if (f.name.empty()) {
    for (const auto& [name, caps] : config.users) print(config.users, name, "user");
    for (const auto& [name, caps] : config.groups) print(config.groups, name, "group");
    if (out.empty()) throw Error(doing + ": no capability set for users or groups");
  } else {
    print(config.users, f.name, "user");
    print(config.groups, f.name, "group");
    if (out.empty()) throw Error(doing + ": no capability set for user/group " + f.name);
  }
  std::cout << out;
}

void avail(const CapabilityFlags& f) {
  std::vector<std::string> caps, unknown;
  config::split_capabilities(f.caps, caps, unknown);
  if (!unknown.empty())
    throw Error("Unable to list available capabilities: unknown capabilities found in: " + joined(unknown));
  std::string out;
  for (const config::KnownCapability& known : config::known_capabilities()) {
    if (!caps.empty() && std::find(caps.begin(), caps.end(), known.name) == caps.end()) continue;
    char line[512];
    std::snprintf(line, sizeof line, "%-22s %s\n\n", (std::string(known.name) + ":").c_str(), known.description);
    out += line;
  }
  std::cout << out;
}

}  // namespace

void add_capability_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "capability", "Manage the capabilities granted to users and groups in capability.json (add and drop: root)");
  cmd->alias("caps");
  cmd->require_subcommand(1);
  cmd->footer(
      "The file is PREFIX/etc/capsa/capability.json, beside capsa.conf, in Apptainer's format. Without a setuid\n"
      "helper a grant gives nothing on the host: --add-caps grants capabilities in the container's user\n"
      "namespace (docs/administration.md#capabilities-capabilityjson).");
  auto flags = std::make_shared<CapabilityFlags>();
  for (const bool add : {true, false}) {
    auto* sub = cmd->add_subcommand(
        add ? "add" : "drop",
        add ? "Grant capabilities to a user or a group: add [--user USER|--group GROUP] CAPS (root only)"
            : "Take capabilities back from a user or a group: drop [--user USER|--group GROUP] CAPS (root only)");
    sub->add_option("-u,--user", flags->user, "The user (also APPTAINER_CAP_USER)");
    sub->add_option("-g,--group", flags->group, "The group (also APPTAINER_CAP_GROUP)");
    sub->add_option("caps", flags->caps, "Comma-separated capabilities: CAP_NET_RAW, net_raw, ALL")->required();
    sub->callback([flags, add] { manage(*flags, add); });
  }
  auto* list_cmd =
      cmd->add_subcommand("list", "List the capabilities granted to a user or a group, or to all: list [USER|GROUP]");
  list_cmd->add_option("name", flags->name, "A user or group name");
  list_cmd->callback([flags] { list(*flags); });
  auto* avail_cmd = cmd->add_subcommand("avail", "Describe the capabilities that can be granted: avail [CAPS]");
  avail_cmd->add_option("caps", flags->caps, "Comma-separated capabilities (default: all of them)");
  avail_cmd->callback([flags] { avail(*flags); });
}

}  // namespace capsa::cli
