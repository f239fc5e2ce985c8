#pragma once
// The resource limits of a container's cgroup: the OCI runtime spec's LinuxResources, as
// Apptainer takes them from --apply-cgroups FILE (a TOML rendering of that structure,
// etc/apptainer/cgroups.toml) or from its limit flags (--memory, --cpus, --pids-limit...),
// and the cgroup files that carry them out on cgroup v2 and on v1 hierarchies.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace capsa::runtime {

struct DeviceWeight {
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::uint16_t weight = 0;
};

struct DeviceRate {
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::uint64_t rate = 0;
};

struct CgroupLimits {
  std::optional<std::int64_t> memory_limit;        // bytes
  std::optional<std::int64_t> memory_reservation;  // bytes: a soft limit
  std::optional<std::int64_t> memory_swap;         // bytes of memory plus swap; -1: unlimited
  std::optional<std::uint64_t> memory_swappiness;
  bool disable_oom_killer = false;
  std::optional<std::uint64_t> cpu_shares;
  std::optional<std::int64_t> cpu_quota;  // microseconds per period
  std::optional<std::uint64_t> cpu_period;
  std::string cpuset_cpus;
  std::string cpuset_mems;
  std::optional<std::int64_t> pids_limit;  // 0 or less: unlimited
  std::optional<std::uint16_t> blkio_weight;
  std::vector<DeviceWeight> blkio_weight_devices;
  std::vector<DeviceRate> throttle_read_bps, throttle_write_bps, throttle_read_iops, throttle_write_iops;
  std::map<std::string, std::string> unified;  // cgroup v2 file -> value, written as given

  bool empty() const;
};

// The limit flags as typed (Apptainer's types: sizes such as 512M, a CPU count such as
// 1.5, "/dev/sda:500" device weights). Empty strings and unset numbers: not given.
struct CgroupFlags {
  std::string apply_file;  // --apply-cgroups
  std::string cpus;
  std::optional<std::int64_t> cpu_shares;
  std::string cpuset_cpus;
  std::string cpuset_mems;
  std::string memory;
  std::string memory_reservation;
  std::string memory_swap;
  bool oom_kill_disable = false;
  std::optional<std::int64_t> pids_limit;
  std::optional<std::int64_t> blkio_weight;
  std::vector<std::string> blkio_weight_device;

  bool any() const;
};

// The limits the flags ask for; throws Error naming the flag that is malformed, or when
// --apply-cgroups is combined with a limit flag.
CgroupLimits cgroup_limits_from(const CgroupFlags& flags);

// --apply-cgroups FILE: Apptainer's TOML; throws Error naming the file and what is wrong
// (a setting capsa cannot carry out is refused, never ignored).
CgroupLimits load_cgroup_toml(const std::string& path);

// A byte count as Docker's and Apptainer's flags take it: a number with an optional
// b, k, m, g, t or p suffix (binary multiples; "kb", "kib" too), case-insensitive.
std::optional<std::int64_t> parse_byte_size(const std::string& text);

// One write into a cgroup: `file` in the hierarchy of `controller` (v1) or in the
// container's cgroup (v2, where `controller` is what must be enabled for it).
struct CgroupSetting {
  std::string controller;
  std::string file;
  std::string value;
  // Written instead where `file` is missing (BFQ's weights, when the I/O scheduler is BFQ).
  std::string alternative_file;
  std::string alternative_value;
};

// The writes that carry `limits` out, in the order they must be made. Throws Error for a
// combination the kernel cannot express (a swap limit without a memory limit on v2).
std::vector<CgroupSetting> cgroup_v2_settings(const CgroupLimits& limits);
std::vector<CgroupSetting> cgroup_v1_settings(const CgroupLimits& limits);

}  // namespace capsa::runtime
