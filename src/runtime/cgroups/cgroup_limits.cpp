#include "runtime/cgroups/cgroup_limits.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>

#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::runtime {
namespace {

constexpr std::uint64_t kDefaultCpuPeriod = 100000;  // microseconds, the kernel's and Apptainer's

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::int64_t size_flag(const std::string& flag, const std::string& value, bool minus_one_allowed) {
  if (minus_one_allowed && value == "-1") return -1;
  std::optional<std::int64_t> bytes = parse_byte_size(value);
  if (!bytes) throw Error(flag + " " + value + ": expected a size such as 512M or 2G");
  return *bytes;
}

// "/dev/sda:500": the device's numbers and the weight (10 to 1000).
DeviceWeight device_weight(const std::string& spec) {
  const auto colon = spec.rfind(':');
  const std::string what = "--blkio-weight-device " + spec;
  if (colon == std::string::npos || colon == 0) throw Error(what + ": expected DEVICE:WEIGHT, e.g. /dev/sda:500");
  const std::string device = spec.substr(0, colon);
  int weight = 0;
  const std::string number = spec.substr(colon + 1);
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), weight);
  if (error != std::errc() || end != number.data() + number.size() || weight < 10 || weight > 1000)
    throw Error(what + ": the weight must be a number from 10 to 1000");
  struct stat st {};
  if (::stat(device.c_str(), &st) != 0) throw_errno(what);
  if (!S_ISBLK(st.st_mode)) throw Error(what + ": " + device + " is not a block device");
  return {static_cast<std::int64_t>(major(st.st_rdev)), static_cast<std::int64_t>(minor(st.st_rdev)),
          static_cast<std::uint16_t>(weight)};
}

std::string device_of(std::int64_t major_number, std::int64_t minor_number) {
  return std::to_string(major_number) + ":" + std::to_string(minor_number);
}

// The kernel's conversions between v1 and v2 scales, as runc makes them: cpu.shares
// (2..262144) to cpu.weight (1..10000), blkio weights (10..1000) to io.weight (1..10000).
std::uint64_t cpu_weight_of_shares(std::uint64_t shares) {
  shares = std::clamp<std::uint64_t>(shares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

std::uint64_t io_weight_of_blkio(std::uint64_t weight) {
  weight = std::clamp<std::uint64_t>(weight, 10, 1000);
  return 1 + ((weight - 10) * 9999) / 990;
}

std::string controller_of(const std::string& file) { return file.substr(0, file.find('.')); }

}  // namespace

bool CgroupLimits::empty() const {
  return !memory_limit && !memory_reservation && !memory_swap && !memory_swappiness && !disable_oom_killer &&
         !cpu_shares && !cpu_quota && !cpu_period && cpuset_cpus.empty() && cpuset_mems.empty() && !pids_limit &&
         !blkio_weight && blkio_weight_devices.empty() && throttle_read_bps.empty() && throttle_write_bps.empty() &&
         throttle_read_iops.empty() && throttle_write_iops.empty() && unified.empty();
}

bool CgroupFlags::any() const {
  return !apply_file.empty() || !cpus.empty() || cpu_shares || !cpuset_cpus.empty() || !cpuset_mems.empty() ||
         !memory.empty() || !memory_reservation.empty() || !memory_swap.empty() || oom_kill_disable || pids_limit ||
         blkio_weight || !blkio_weight_device.empty();
}

namespace {

// A decimal number, all of `text`; strtod rather than std::from_chars, whose floating
// point version pulls libm into the runner (fesetround). capsa never calls setlocale:
// the decimal point is ".".
std::optional<double> parse_decimal(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::int64_t> parse_byte_size(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) return std::nullopt;
  const std::optional<double> parsed = parse_decimal(text.substr(0, digits));
  if (!parsed || *parsed < 0) return std::nullopt;
  const double number = *parsed;
  const std::string suffix = lower(text.substr(digits));
  int power = 0;
  if (!suffix.empty() && suffix != "b") {
    const std::string units = "kmgtp";
    const auto unit = units.find(suffix[0]);
    const std::string rest = suffix.substr(1);
    if (unit == std::string::npos || !(rest.empty() || rest == "b" || rest == "ib")) return std::nullopt;
    power = static_cast<int>(unit) + 1;
  }
  // A product, not std::pow: the runner links no libm, and pow's current symbol is glibc
  // 2.29's, above the release tarball's floor (scripts/check-glibc-floor.sh).
  double bytes = number;
  for (int i = 0; i < power; ++i) bytes *= 1024.0;
  if (bytes >= static_cast<double>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return static_cast<std::int64_t>(bytes);
}

CgroupLimits cgroup_limits_from(const CgroupFlags& f) {
  if (!f.apply_file.empty()) {
    CgroupFlags others = f;
    others.apply_file.clear();
    if (others.any())
      throw Error("--apply-cgroups cannot be combined with the cgroup limit flags (--memory, --cpus, --pids-limit...)");
    return load_cgroup_toml(f.apply_file);
  }
  CgroupLimits limits;
  if (!f.cpus.empty()) {
    const double cpus = parse_decimal(f.cpus).value_or(0);
    if (!(cpus > 0)) throw Error("--cpus " + f.cpus + ": expected a number of CPUs greater than 0, such as 1.5");
    limits.cpu_period = kDefaultCpuPeriod;
    // Rounded to the nearest microsecond by hand: the runner links no libm (llround).
    const double quota = cpus * static_cast<double>(kDefaultCpuPeriod);
    auto whole = static_cast<std::int64_t>(quota);
    if (quota - static_cast<double>(whole) >= 0.5) ++whole;
    limits.cpu_quota = std::max<std::int64_t>(1000, whole);
  }
  if (f.cpu_shares) {
    if (*f.cpu_shares < 2 || *f.cpu_shares > 262144) throw Error("--cpu-shares must be from 2 to 262144");
    limits.cpu_shares = static_cast<std::uint64_t>(*f.cpu_shares);
  }
  limits.cpuset_cpus = f.cpuset_cpus;
  limits.cpuset_mems = f.cpuset_mems;
  if (!f.memory.empty()) limits.memory_limit = size_flag("--memory", f.memory, false);
  if (!f.memory_reservation.empty())
    limits.memory_reservation = size_flag("--memory-reservation", f.memory_reservation, false);
  if (!f.memory_swap.empty()) limits.memory_swap = size_flag("--memory-swap", f.memory_swap, true);
  limits.disable_oom_killer = f.oom_kill_disable;
  if (f.pids_limit) limits.pids_limit = *f.pids_limit;
  if (f.blkio_weight) {
    if (*f.blkio_weight < 10 || *f.blkio_weight > 1000) throw Error("--blkio-weight must be from 10 to 1000");
    limits.blkio_weight = static_cast<std::uint16_t>(*f.blkio_weight);
  }
  for (const std::string& spec : f.blkio_weight_device) limits.blkio_weight_devices.push_back(device_weight(spec));
  return limits;
}

std::vector<CgroupSetting> cgroup_v2_settings(const CgroupLimits& l) {
  std::vector<CgroupSetting> out;
  auto add = [&out](const std::string& file, const std::string& value) {
    out.push_back({controller_of(file), file, value});
  };
  if (!l.cpuset_cpus.empty()) add("cpuset.cpus", l.cpuset_cpus);
  if (!l.cpuset_mems.empty()) add("cpuset.mems", l.cpuset_mems);
  if (l.cpu_shares) add("cpu.weight", std::to_string(cpu_weight_of_shares(*l.cpu_shares)));
  if (l.cpu_quota || l.cpu_period) {
    const std::string quota = l.cpu_quota && *l.cpu_quota > 0 ? std::to_string(*l.cpu_quota) : "max";
    add("cpu.max", quota + " " + std::to_string(l.cpu_period.value_or(kDefaultCpuPeriod)));
  }
  if (l.memory_reservation) add("memory.low", std::to_string(*l.memory_reservation));
  if (l.memory_limit) add("memory.max", *l.memory_limit > 0 ? std::to_string(*l.memory_limit) : "max");
  if (l.memory_swap) {
    // OCI's swap is memory plus swap; v2's swap.max is the swap alone.
    if (*l.memory_swap < 0) {
      add("memory.swap.max", "max");
    } else if (*l.memory_swap > 0) {
      if (!l.memory_limit || *l.memory_limit <= 0)
        throw Error("a swap limit (--memory-swap) needs a memory limit (--memory)");
      if (*l.memory_swap < *l.memory_limit)
        throw Error("--memory-swap must be at least --memory (it counts memory and swap)");
      add("memory.swap.max", std::to_string(*l.memory_swap - *l.memory_limit));
    }
  }
  if (l.memory_swappiness) throw Error("memory swappiness has no cgroup v2 setting; leave it out of the cgroups file");
  if (l.pids_limit) add("pids.max", *l.pids_limit > 0 ? std::to_string(*l.pids_limit) : "max");
  // BFQ's own file takes the blkio scale (10..1000) as it is.
  if (l.blkio_weight) {
    add("io.weight", "default " + std::to_string(io_weight_of_blkio(*l.blkio_weight)));
    out.back().alternative_file = "io.bfq.weight";
    out.back().alternative_value = "default " + std::to_string(*l.blkio_weight);
  }
  for (const DeviceWeight& d : l.blkio_weight_devices) {
    add("io.weight", device_of(d.major, d.minor) + " " + std::to_string(io_weight_of_blkio(d.weight)));
    out.back().alternative_file = "io.bfq.weight";
    out.back().alternative_value = device_of(d.major, d.minor) + " " + std::to_string(d.weight);
  }
  const std::pair<const std::vector<DeviceRate>*, const char*> rates[] = {{&l.throttle_read_bps, "rbps"},
                                                                          {&l.throttle_write_bps, "wbps"},
                                                                          {&l.throttle_read_iops, "riops"},
                                                                          {&l.throttle_write_iops, "wiops"}};
  for (const auto& [list, key] : rates)
    for (const DeviceRate& d : *list)
      add("io.max", device_of(d.major, d.minor) + " " + key + "=" + std::to_string(d.rate));
  for (const auto& [file, value] : l.unified) {
    if (file.find('/') != std::string::npos || file.find('.') == std::string::npos || file.starts_with("cgroup."))
      throw Error("unified." + file + ": not a controller file of a cgroup");
    add(file, value);
  }
  return out;
}

std::vector<CgroupSetting> cgroup_v1_settings(const CgroupLimits& l) {
  std::vector<CgroupSetting> out;
  auto add = [&out](const std::string& file, const std::string& value) {
    out.push_back({controller_of(file), file, value});
  };
  if (!l.unified.empty()) throw Error("the [unified] settings need cgroup v2, and this host has cgroup v1 hierarchies");
  if (!l.cpuset_cpus.empty()) add("cpuset.cpus", l.cpuset_cpus);
  if (!l.cpuset_mems.empty()) add("cpuset.mems", l.cpuset_mems);
  if (l.cpu_shares) add("cpu.shares", std::to_string(*l.cpu_shares));
  if (l.cpu_quota || l.cpu_period) {
    add("cpu.cfs_period_us", std::to_string(l.cpu_period.value_or(kDefaultCpuPeriod)));
    add("cpu.cfs_quota_us", l.cpu_quota && *l.cpu_quota > 0 ? std::to_string(*l.cpu_quota) : "-1");
  }
  if (l.memory_reservation) add("memory.soft_limit_in_bytes", std::to_string(*l.memory_reservation));
  if (l.memory_limit) add("memory.limit_in_bytes", *l.memory_limit > 0 ? std::to_string(*l.memory_limit) : "-1");
  if (l.memory_swap && *l.memory_swap != 0) {
    if (*l.memory_swap > 0 && (!l.memory_limit || *l.memory_swap < *l.memory_limit))
      throw Error("--memory-swap must be at least --memory (it counts memory and swap)");
    add("memory.memsw.limit_in_bytes", std::to_string(*l.memory_swap));
  }
  if (l.memory_swappiness) add("memory.swappiness", std::to_string(*l.memory_swappiness));
  if (l.disable_oom_killer) add("memory.oom_control", "1");
  if (l.pids_limit) add("pids.max", *l.pids_limit > 0 ? std::to_string(*l.pids_limit) : "max");
  if (l.blkio_weight) {
    add("blkio.weight", std::to_string(*l.blkio_weight));
    out.back().alternative_file = "blkio.bfq.weight";
    out.back().alternative_value = out.back().value;
  }
  for (const DeviceWeight& d : l.blkio_weight_devices) {
    add("blkio.weight_device", device_of(d.major, d.minor) + " " + std::to_string(d.weight));
    out.back().alternative_file = "blkio.bfq.weight_device";
    out.back().alternative_value = out.back().value;
  }
  const std::pair<const std::vector<DeviceRate>*, const char*> rates[] = {
      {&l.throttle_read_bps, "blkio.throttle.read_bps_device"},
      {&l.throttle_write_bps, "blkio.throttle.write_bps_device"},
      {&l.throttle_read_iops, "blkio.throttle.read_iops_device"},
      {&l.throttle_write_iops, "blkio.throttle.write_iops_device"}};
  for (const auto& [list, file] : rates)
    for (const DeviceRate& d : *list) add(file, device_of(d.major, d.minor) + " " + std::to_string(d.rate));
  return out;
}

}  // namespace capsa::runtime
