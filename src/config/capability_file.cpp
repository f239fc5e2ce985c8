#include "config/capability_file.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "config/load.hpp"
#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace capsa::config {
namespace {

void add_once(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

Error not_a_list(const std::string& origin, const char* key, const std::string& name) {
  std::string message = origin;
  message.append(": \"").append(key).append("\".").append(name).append(" must be a list of capabilities");
  return Error(message);
}

std::map<std::string, std::vector<std::string>> read_map(const nlohmann::json& object, const char* key,
                                                         const std::string& origin) {
  std::map<std::string, std::vector<std::string>> out;
  if (!object.contains(key) || object[key].is_null()) return out;
  if (!object[key].is_object()) throw Error(origin + ": \"" + key + "\" must be an object of name: [capabilities]");
  for (const auto& [name, caps] : object[key].items()) {
    if (caps.is_null()) {
      out[name];
      continue;
    }
    if (!caps.is_array()) throw not_a_list(origin, key, name);
    for (const auto& cap : caps) {
      if (!cap.is_string()) throw not_a_list(origin, key, name);
      out[name].push_back(cap.get<std::string>());
    }
  }
  return out;
}

}  // namespace

std::string capability_file_path() {
  std::string conf = system_config_path();
  if (conf.empty()) conf = config_candidates("capsa.conf").front();
  return conf.substr(0, conf.find_last_of('/')) + "/capability.json";
}

CapabilityConfig parse_capability_config(const std::string& text, const std::string& origin) {
  CapabilityConfig config;
  if (text.empty()) return config;
  nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    throw Error("while parsing capability config data: " + origin + " is not a JSON object (fix or remove it)");
  config.users = read_map(json, "users", origin);
  config.groups = read_map(json, "groups", origin);
  return config;
}

std::string capability_config_text(const CapabilityConfig& config) {
  // Go's encoder: the struct's fields in order (users, groups), map keys sorted.
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  auto put = [&json](const char* key, const std::map<std::string, std::vector<std::string>>& map) {
    if (map.empty()) return;  // omitempty
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& [name, caps] : map)
      object[name] = caps.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(caps);
    json[key] = object;
  };
  put("users", config.users);
  put("groups", config.groups);
  return json.dump(1, '\t');
}

void split_capabilities(const std::string& list, std::vector<std::string>& known, std::vector<std::string>& unknown) {
  std::size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string name = list.substr(start, comma - start);
    start = comma + 1;
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (name.rfind("CAP_", 0) != 0) name.insert(0, "CAP_");
    if (name == "CAP_ALL") {
      known.clear();
      unknown.clear();
      for (const KnownCapability& cap : known_capabilities()) known.emplace_back(cap.name);
      return;
    }
    const auto& all = known_capabilities();
    const bool is_known =
        std::any_of(all.begin(), all.end(), [&name](const KnownCapability& cap) { return name == cap.name; });
    add_once(is_known ? known : unknown, name);
    if (comma == list.size()) break;
  }
}

const std::vector<KnownCapability>& known_capabilities() {
  // Summaries of capabilities(7), in capsa's words.
  static const std::vector<KnownCapability> all = {
      {"CAP_AUDIT_CONTROL", "Turn kernel auditing on and off, and change its rules and settings."},
      {"CAP_AUDIT_READ", "Read the audit log through a multicast netlink socket."},
      {"CAP_AUDIT_WRITE", "Write records to the kernel's audit log."},
      {"CAP_BLOCK_SUSPEND", "Use features that can keep the system from suspending (EPOLLWAKEUP, wake locks)."},
      {"CAP_BPF", "Run privileged BPF operations: create maps and load programs."},
      {"CAP_CHECKPOINT_RESTORE", "Checkpoint and restore processes: choose PIDs, read other processes' maps."},
      {"CAP_CHOWN", "Change any file's owner and group."},
      {"CAP_DAC_OVERRIDE", "Bypass the read, write and execute permission checks of files."},
      {"CAP_DAC_READ_SEARCH", "Bypass the read permission checks of files and the search checks of directories."},
      {"CAP_FOWNER", "Act as the owner of any file: change its mode, times, ACLs and flags."},
      {"CAP_FSETID", "Keep the set-user-ID and set-group-ID bits of a file when it is modified."},
      {"CAP_IPC_LOCK", "Lock memory (mlock, mlockall, mmap MAP_LOCKED, SHM_LOCK)."},
      {"CAP_IPC_OWNER", "Bypass the permission checks of System V IPC objects."},
      {"CAP_KILL", "Send signals to any process."},
      {"CAP_LEASE", "Take leases on files the process does not own."},
      {"CAP_LINUX_IMMUTABLE", "Set and clear the immutable and append-only flags of files."},
      {"CAP_MAC_ADMIN", "Change the Mandatory Access Control configuration (SMACK)."},
      {"CAP_MAC_OVERRIDE", "Override Mandatory Access Control (SMACK)."},
      {"CAP_MKNOD", "Create device and other special files with mknod."},
      {"CAP_NET_ADMIN", "Administer networks: interfaces, routes, firewall rules, sockets' options."},
      {"CAP_NET_BIND_SERVICE", "Bind sockets to privileged ports (below 1024)."},
      {"CAP_NET_BROADCAST", "Broadcast and listen to multicast on sockets."},
      {"CAP_NET_RAW", "Use raw and packet sockets (ping, traceroute), and bind to any address."},
      {"CAP_PERFMON", "Use performance monitoring (perf_event_open) and observability features."},
      {"CAP_SETFCAP", "Set file capabilities."},
      {"CAP_SETGID", "Change group IDs and supplementary groups as the process likes."},
      {"CAP_SETPCAP", "Change capability sets: add to the inheritable set, drop from the bounding set."},
      {"CAP_SETUID", "Change user IDs as the process likes."},
      {"CAP_SYSLOG", "Run privileged syslog operations, and see kernel addresses."},
      {"CAP_SYS_ADMIN", "Run a wide range of administration operations: mount, sethostname, quotas..."},
      {"CAP_SYS_BOOT", "Reboot the system and load new kernels."},
      {"CAP_SYS_CHROOT", "Use chroot and change mount namespaces."},
      {"CAP_SYS_MODULE", "Load and unload kernel modules."},
      {"CAP_SYS_NICE", "Raise priorities and set scheduling policies and CPU affinity of any process."},
      {"CAP_SYS_PACCT", "Turn process accounting on and off."},
      {"CAP_SYS_PTRACE", "Trace and inspect any process (ptrace, process_vm_readv)."},
      {"CAP_SYS_RAWIO", "Perform raw I/O: I/O ports, /dev/mem, raw block devices."},
      {"CAP_SYS_RESOURCE", "Override resource limits and quotas, and raise hard limits."},
      {"CAP_SYS_TIME", "Set the system clock and the real-time clock."},
      {"CAP_SYS_TTY_CONFIG", "Configure terminals (vhangup) and use their privileged ioctls."},
      {"CAP_WAKE_ALARM", "Set timers that wake the system up (CLOCK_BOOTTIME_ALARM, CLOCK_REALTIME_ALARM)."},
  };
  return all;
}

}  // namespace capsa::config
