// The cgroup limits' arithmetic, without a container: sizes as the flags take them, the
// TOML file of --apply-cgroups, and the files written on cgroup v2 and v1.
#include "runtime/cgroups/cgroup_limits.hpp"

#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

std::string value_of(const std::vector<CgroupSetting>& settings, const std::string& file) {
  for (const CgroupSetting& s : settings)
    if (s.file == file) return s.value;
  return "(unset)";
}

TEST(CgroupSizes, TakeDockerSuffixes) {
  EXPECT_EQ(parse_byte_size("1024"), 1024);
  EXPECT_EQ(parse_byte_size("512m"), 512LL << 20);
  EXPECT_EQ(parse_byte_size("2G"), 2LL << 30);
  EXPECT_EQ(parse_byte_size("64MiB"), 64LL << 20);
  EXPECT_EQ(parse_byte_size("1.5k"), 1536);
  EXPECT_EQ(parse_byte_size("10b"), 10);
  EXPECT_FALSE(parse_byte_size("lots"));
  EXPECT_FALSE(parse_byte_size("12x"));
  EXPECT_FALSE(parse_byte_size(""));
}

TEST(CgroupFlagsToLimits, ConvertAsApptainer) {
  CgroupFlags f;
  f.cpus = "1.5";
  f.memory = "256M";
  f.memory_swap = "512M";
  f.pids_limit = 30;
  f.cpu_shares = 512;
  const CgroupLimits l = cgroup_limits_from(f);
  EXPECT_EQ(l.cpu_quota, 150000);
  EXPECT_EQ(l.cpu_period, 100000U);
  const auto v2 = cgroup_v2_settings(l);
  EXPECT_EQ(value_of(v2, "cpu.max"), "150000 100000");
  EXPECT_EQ(value_of(v2, "memory.max"), std::to_string(256 << 20));
  EXPECT_EQ(value_of(v2, "memory.swap.max"), std::to_string(256 << 20));  // the swap alone
  EXPECT_EQ(value_of(v2, "pids.max"), "30");
  EXPECT_EQ(value_of(v2, "cpu.weight"), "20");
  const auto v1 = cgroup_v1_settings(l);
  EXPECT_EQ(value_of(v1, "cpu.cfs_quota_us"), "150000");
  EXPECT_EQ(value_of(v1, "memory.limit_in_bytes"), std::to_string(256 << 20));
  EXPECT_EQ(value_of(v1, "memory.memsw.limit_in_bytes"), std::to_string(512 << 20));
  EXPECT_EQ(value_of(v1, "cpu.shares"), "512");
}

TEST(CgroupFlagsToLimits, RefuseBadValuesNamingTheFlag) {
  auto message = [](const CgroupFlags& f) {
    try {
      cgroup_limits_from(f);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CgroupFlags memory;
  memory.memory = "lots";
  EXPECT_EQ(message(memory), "--memory lots: expected a size such as 512M or 2G");
  CgroupFlags cpus;
  cpus.cpus = "-1";
  EXPECT_NE(message(cpus).find("--cpus -1"), std::string::npos);
  CgroupFlags weight;
  weight.blkio_weight = 5;
  EXPECT_EQ(message(weight), "--blkio-weight must be from 10 to 1000");
  CgroupFlags device;
  device.blkio_weight_device = {"/dev/null:500"};
  EXPECT_NE(message(device).find("is not a block device"), std::string::npos);
  CgroupFlags both;
  both.apply_file = "/nonexistent.toml";
  both.memory = "1G";
  EXPECT_NE(message(both).find("--apply-cgroups cannot be combined"), std::string::npos);
  CgroupFlags swap;
  swap.memory = "1G";
  swap.memory_swap = "512M";
  EXPECT_THROW(cgroup_v2_settings(cgroup_limits_from(swap)), Error);
}

TEST(CgroupToml, ReadsApptainersFormat) {
  test::TempDir dir;
  const std::string path = dir.write("cgroups.toml", R"([memory]
    limit = 536870912
    reservation = 268435456
    kernel = 0
[cpu]
    shares = 1024
    quota = 50000
    period = 100000
    cpus = "0"
[pids]
    limit = 64
[blockIO]
    weight = 500
    [[blockIO.throttleReadBpsDevice]]
        major = 7
        minor = 0
        rate = 1048576
[unified]
    "memory.high" = "400000000"
)");
  const CgroupLimits l = load_cgroup_toml(path);
  EXPECT_EQ(l.memory_limit, 536870912);
  EXPECT_EQ(l.memory_reservation, 268435456);
  EXPECT_EQ(l.cpu_shares, 1024U);
  EXPECT_EQ(l.cpu_quota, 50000);
  EXPECT_EQ(l.cpuset_cpus, "0");
  EXPECT_EQ(l.pids_limit, 64);
  const auto v2 = cgroup_v2_settings(l);
  EXPECT_EQ(value_of(v2, "io.max"), "7:0 rbps=1048576");
  EXPECT_EQ(value_of(v2, "memory.high"), "400000000");
  EXPECT_EQ(value_of(v2, "cpu.max"), "50000 100000");
  EXPECT_THROW(cgroup_v1_settings(l), Error);  // [unified] needs v2
}

TEST(CgroupToml, RefusesWhatItCannotDo) {
  test::TempDir dir;
  auto message = [&dir](const std::string& text) {
    try {
      load_cgroup_toml(dir.write("c.toml", text));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("[memory]\nlimt = 5\n").find("memory.limt: unknown setting"), std::string::npos);
  EXPECT_NE(message("[memory]\nkernel = 5\n").find("memory.kernel: not supported"), std::string::npos);
  EXPECT_NE(message("[[devices]]\nallow = false\n").find("devices: not supported"), std::string::npos);
  EXPECT_NE(message("[pids]\nlimit = \"x\"\n").find("pids.limit: expected an integer"), std::string::npos);
  EXPECT_NE(message("[pids\n").find("line 1"), std::string::npos);
  EXPECT_NE(message("[pids]\nlimit = 0\n").find("sets no limit"), std::string::npos);
  EXPECT_THROW(load_cgroup_toml(dir / "missing.toml"), Error);
}

}  // namespace
}  // namespace capsa::runtime
