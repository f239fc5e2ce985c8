// --apply-cgroups FILE: Apptainer's cgroups TOML, the OCI runtime spec's LinuxResources
// with its JSON names as keys ([memory] limit, [cpu] shares, [[blockIO.weightDevice]]...),
// read with Debian's toml++ (header-only here, so the runner loads no library for it).
#include <toml++/toml.h>

#include <unistd.h>

#include <set>

#include "runtime/cgroups/cgroup_limits.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error("--apply-cgroups " + path_ + ": " + key + ": " + what);
  }

  // The keys of `table` must all be in `known`; `refused` ones may only hold zero values.
  void check_keys(const toml::table& table, const std::string& name, const std::set<std::string>& known,
                  const std::set<std::string>& refused = {}) const {
    for (const auto& [key, node] : table) {
      const std::string full = name + "." + std::string(key.str());
      if (refused.count(std::string(key.str())) != 0) {
        if (!is_zero(node)) fail(full, "not supported by capsa (leave it out or at 0)");
        continue;
      }
      if (known.count(std::string(key.str())) == 0) fail(full, "unknown setting");
    }
  }

  static bool is_zero(const toml::node& node) {
    if (auto v = node.value<std::int64_t>()) return *v == 0;
    if (auto b = node.value<bool>()) return !*b;
    if (auto s = node.value<std::string>()) return s->empty();
    if (const toml::array* a = node.as_array()) return a->empty();
    if (const toml::table* t = node.as_table()) return t->empty();
    return false;
  }

  std::optional<std::int64_t> integer(const toml::table& table, const std::string& name, const char* key) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) return std::nullopt;
    auto value = node->value<std::int64_t>();
    if (!value) fail(name + "." + key, "expected an integer");
    return value;
  }

  // OCI's zero means "not set" for these settings.
  std::optional<std::int64_t> setting(const toml::table& table, const std::string& name, const char* key) const {
    auto value = integer(table, name, key);
    return value && *value != 0 ? value : std::nullopt;
  }

  std::optional<std::uint64_t> positive(const toml::table& table, const std::string& name, const char* key) const {
    auto value = setting(table, name, key);
    if (value && *value < 0) fail(name + "." + key, "must not be negative");
    return value ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(*value)) : std::nullopt;
  }

  std::string text(const toml::table& table, const std::string& name, const char* key) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) return "";
    auto value = node->value<std::string>();
    if (!value) fail(name + "." + key, "expected a string");
    return *value;
  }

  bool flag(const toml::table& table, const std::string& name, const char* key) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) return false;
    auto value = node->value<bool>();
    if (!value) fail(name + "." + key, "expected true or false");
    return *value;
  }

  const toml::table* section(const toml::table& table, const std::string& name, const char* key) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) return nullptr;
    if (!node->is_table()) fail(name.empty() ? key : name + "." + key, "expected a table");
    return node->as_table();
  }

  // An array of tables of device numbers and one value.
  template <typename Entry>
  std::vector<Entry> devices(const toml::table& table, const std::string& name, const char* key,
                             const char* value_key) const {
    std::vector<Entry> out;
    const toml::node* node = table.get(key);
    if (node == nullptr) return out;
    const toml::array* list = node->as_array();
    if (list == nullptr) fail(name + "." + key, "expected an array of tables ([[" + name + "." + key + "]])");
    for (const toml::node& item : *list) {
      const toml::table* entry = item.as_table();
      const std::string entry_name = name + "." + key;
      if (entry == nullptr) fail(entry_name, "expected tables with major, minor and " + std::string(value_key));
      check_keys(*entry, entry_name, {"major", "minor", value_key}, {"leafWeight"});
      auto major_number = integer(*entry, entry_name, "major");
      auto minor_number = integer(*entry, entry_name, "minor");
      auto value = integer(*entry, entry_name, value_key);
      if (!major_number || !minor_number || !value || *value < 0)
        fail(entry_name, "each needs major, minor and a non-negative " + std::string(value_key));
      Entry e;
      e.major = *major_number;
      e.minor = *minor_number;
      if constexpr (std::is_same_v<Entry, DeviceWeight>) {
        if (*value < 10 || *value > 1000) fail(entry_name + ".weight", "must be from 10 to 1000");
        e.weight = static_cast<std::uint16_t>(*value);
      } else {
        e.rate = static_cast<std::uint64_t>(*value);
      }
      out.push_back(e);
    }
    return out;
  }

 private:
  std::string path_;
};

}  // namespace

CgroupLimits load_cgroup_toml(const std::string& path) {
  if (::access(path.c_str(), R_OK) != 0) throw_errno("--apply-cgroups " + path);
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw Error("--apply-cgroups " + path + ": line " + std::to_string(where.line) + ": " +
                std::string(e.description()));
  }
  Reader r(path);
  CgroupLimits l;
  // What capsa does not set up through cgroups is refused unless it is empty.
  r.check_keys(root, "", {"memory", "cpu", "pids", "blockIO", "unified"},
               {"devices", "hugepageLimits", "network", "rdma"});
  if (const toml::table* memory = r.section(root, "", "memory")) {
    r.check_keys(*memory, "memory", {"limit", "reservation", "swap", "swappiness", "disableOOMKiller"},
                 {"kernel", "kernelTCP", "useHierarchy", "checkBeforeUpdate"});
    l.memory_limit = r.setting(*memory, "memory", "limit");
    l.memory_reservation = r.setting(*memory, "memory", "reservation");
    l.memory_swap = r.setting(*memory, "memory", "swap");
    l.memory_swappiness = r.positive(*memory, "memory", "swappiness");
    l.disable_oom_killer = r.flag(*memory, "memory", "disableOOMKiller");
  }
  if (const toml::table* cpu = r.section(root, "", "cpu")) {
    r.check_keys(*cpu, "cpu", {"shares", "quota", "period", "cpus", "mems"},
                 {"realtimeRuntime", "realtimePeriod", "idle", "burst"});
    l.cpu_shares = r.positive(*cpu, "cpu", "shares");
    l.cpu_quota = r.setting(*cpu, "cpu", "quota");
    l.cpu_period = r.positive(*cpu, "cpu", "period");
    l.cpuset_cpus = r.text(*cpu, "cpu", "cpus");
    l.cpuset_mems = r.text(*cpu, "cpu", "mems");
  }
  if (const toml::table* pids = r.section(root, "", "pids")) {
    r.check_keys(*pids, "pids", {"limit"});
    l.pids_limit = r.setting(*pids, "pids", "limit");
  }
  if (const toml::table* io = r.section(root, "", "blockIO")) {
    r.check_keys(*io, "blockIO",
                 {"weight", "weightDevice", "throttleReadBpsDevice", "throttleWriteBpsDevice", "throttleReadIOPSDevice",
                  "throttleWriteIOPSDevice"},
                 {"leafWeight"});
    if (auto weight = r.setting(*io, "blockIO", "weight")) {
      if (*weight < 10 || *weight > 1000) r.fail("blockIO.weight", "must be from 10 to 1000");
      l.blkio_weight = static_cast<std::uint16_t>(*weight);
    }
    l.blkio_weight_devices = r.devices<DeviceWeight>(*io, "blockIO", "weightDevice", "weight");
    l.throttle_read_bps = r.devices<DeviceRate>(*io, "blockIO", "throttleReadBpsDevice", "rate");
    l.throttle_write_bps = r.devices<DeviceRate>(*io, "blockIO", "throttleWriteBpsDevice", "rate");
    l.throttle_read_iops = r.devices<DeviceRate>(*io, "blockIO", "throttleReadIOPSDevice", "rate");
    l.throttle_write_iops = r.devices<DeviceRate>(*io, "blockIO", "throttleWriteIOPSDevice", "rate");
  }
  if (const toml::table* unified = r.section(root, "", "unified")) {
    for (const auto& [key, node] : *unified) {
      auto value = node.value<std::string>();
      if (!value) r.fail("unified." + std::string(key.str()), "expected a string");
      l.unified[std::string(key.str())] = *value;
    }
  }
  if (l.empty()) throw Error("--apply-cgroups " + path + ": sets no limit");
  return l;
}

}  // namespace capsa::runtime
