// A guard on tighten() (config/site_config.hpp): every field of SiteConfig and every
// directive capsa reads has a recorded decision, whether it restricts users or not, and
// every restricting one is proven to hold against a user's file that tries to loosen it.
// A new field or directive fails to compile or fails here until someone decides.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "config/directives.hpp"
#include "config/site_config.hpp"

namespace capsa::config {
namespace {

// The number of fields of an aggregate: the most initializers `T{...}` accepts.
struct AnyField {
  template <class T>
  operator T() const;  // never called: only its type matters
};
template <class T, class... Fields>
constexpr std::size_t field_count() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; })
    return field_count<T, Fields..., AnyField>();
  else
    return sizeof...(Fields);
}

enum class Rule {
  stricter,  // restricts users: the stricter of the user's and the administrator's
  users,     // a preference, or root's alone: the user's file chooses
  systems,   // the administrator's alone (programs root runs)
  meta,      // not a directive (origin)
};

// One field: its rule and, for a restriction, how the administrator restricts it and how
// a user's file would loosen it (from the defaults).
struct Field {
  std::string_view name;
  Rule rule;
  std::function<void(SiteConfig&)> restrict = nullptr;
  std::function<void(SiteConfig&)> loosen = nullptr;
};

template <bool SiteConfig::*member>
Field off(std::string_view name) {
  return {name, Rule::stricter, [](SiteConfig& c) { c.*member = false; }, [](SiteConfig& c) { c.*member = true; }};
}

const std::vector<Field>& fields() {
  static const std::vector<Field> all = {
      {"origin", Rule::meta},
      // With user binds off, a user's file binds nothing; otherwise its binds are no more
      // than -B gives.
      {"bind_paths", Rule::stricter,
       [](SiteConfig& c) {
         c.user_bind_control = false;
         c.bind_paths = {"/etc/hosts"};
       },
       [](SiteConfig& c) { c.bind_paths = {"/etc"}; }},
      off<&SiteConfig::mount_proc>("mount_proc"),
      off<&SiteConfig::mount_sys>("mount_sys"),
      off<&SiteConfig::mount_devpts>("mount_devpts"),
      off<&SiteConfig::mount_home>("mount_home"),
      off<&SiteConfig::mount_tmp>("mount_tmp"),
      {"mount_dev", Rule::stricter, [](SiteConfig& c) { c.mount_dev = "minimal"; },
       [](SiteConfig& c) { c.mount_dev = "yes"; }},
      {"mount_hostfs", Rule::stricter, [](SiteConfig& c) { c.mount_hostfs = false; },
       [](SiteConfig& c) { c.mount_hostfs = true; }},
      // Where host mounts propagate, not what a container may see.
      {"mount_slave", Rule::users},
      off<&SiteConfig::config_resolv_conf>("config_resolv_conf"),
      off<&SiteConfig::user_bind_control>("user_bind_control"),
      off<&SiteConfig::enable_fusemount>("enable_fusemount"),
      {"enable_overlay", Rule::stricter, [](SiteConfig& c) { c.enable_overlay = "no"; },
       [](SiteConfig& c) { c.enable_overlay = "yes"; }},
      {"enable_underlay", Rule::stricter, [](SiteConfig& c) { c.enable_underlay = "no"; },
       [](SiteConfig& c) { c.enable_underlay = "preferred"; }},
      {"max_loop_devices", Rule::stricter, [](SiteConfig& c) { c.max_loop_devices = 4; },
       [](SiteConfig& c) { c.max_loop_devices = 100000; }},
      // Root's loop devices only; capsa shares read-only ones either way.
      {"shared_loop_devices", Rule::users},
      {"limit_container_paths", Rule::stricter, [](SiteConfig& c) { c.limit_container_paths = {"/site"}; },
       [](SiteConfig& c) { c.limit_container_paths = {"/"}; }},
      {"limit_container_owners", Rule::stricter, [](SiteConfig& c) { c.limit_container_owners = {"root"}; },
       [](SiteConfig& c) {
         c.limit_container_owners = {"root", "capsa-other"};
       }},
      {"limit_container_groups", Rule::stricter, [](SiteConfig& c) { c.limit_container_groups = {"root"}; },
       [](SiteConfig& c) {
         c.limit_container_groups = {"root", "users"};
       }},
      off<&SiteConfig::allow_container_sif>("allow_container_sif"),
      off<&SiteConfig::allow_container_encrypted>("allow_container_encrypted"),
      off<&SiteConfig::allow_container_squashfs>("allow_container_squashfs"),
      off<&SiteConfig::allow_container_extfs>("allow_container_extfs"),
      off<&SiteConfig::allow_container_dir>("allow_container_dir"),
      off<&SiteConfig::allow_kernel_squashfs>("allow_kernel_squashfs"),
      off<&SiteConfig::allow_kernel_extfs>("allow_kernel_extfs"),
      // Root's alone (a user's FUSE mount is FUSE either way).
      {"fuse_for_lone_gzip_images", Rule::users},
      off<&SiteConfig::allow_pid_ns>("allow_pid_ns"),
      off<&SiteConfig::allow_uts_ns>("allow_uts_ns"),
      // Conveniences: --no-nv and --no-rocm undo them on the command line anyway.
      {"always_use_nv", Rule::users},
      {"always_use_rocm", Rule::users},
      {"use_nvidia_container_cli", Rule::users},
      // ramfs has no size limit: tmpfs -> ramfs would undo `sessiondir max size`.
      {"memory_fs_type", Rule::stricter, [](SiteConfig& c) { c.memory_fs_type = "tmpfs"; },
       [](SiteConfig& c) { c.memory_fs_type = "ramfs"; }},
      {"sessiondir_max_size_mib", Rule::stricter, [](SiteConfig& c) { c.sessiondir_max_size_mib = 8; },
       [](SiteConfig& c) { c.sessiondir_max_size_mib = 4096; }},
      {"keep_image_seconds", Rule::stricter, [](SiteConfig& c) { c.keep_image_seconds = 0; },
       [](SiteConfig& c) { c.keep_image_seconds = 3600; }},
      {"mksquashfs_procs", Rule::stricter, [](SiteConfig& c) { c.mksquashfs_procs = 2; },
       [](SiteConfig& c) { c.mksquashfs_procs = 0; }},
      {"mksquashfs_mem", Rule::stricter, [](SiteConfig& c) { c.mksquashfs_mem = "1G"; },
       [](SiteConfig& c) { c.mksquashfs_mem = "8G"; }},
      {"cni_configuration_path", Rule::systems},
      {"cni_plugin_path", Rule::systems},
  };
  return all;
}

// A new member of SiteConfig needs a row above: what may a user's file do with it?
static_assert(field_count<SiteConfig>() == 40,
              "SiteConfig changed: give every field a row in fields() (site_config_rules_test.cpp) and, "
              "if it restricts users, a rule in tighten() and docs/administration.md");

TEST(SiteConfigRules, EveryFieldHasADecision) {
  EXPECT_EQ(fields().size(), field_count<SiteConfig>());
  std::map<std::string_view, int> seen;
  for (const Field& f : fields()) EXPECT_EQ(++seen[f.name], 1) << f.name << " twice";
}

TEST(SiteConfigRules, NoUsersFileLoosensARestriction) {
  for (const Field& f : fields()) {
    if (f.rule != Rule::stricter) continue;
    SiteConfig system;
    f.restrict(system);
    SiteConfig user = system;  // the user's file: the system's restriction, loosened
    f.loosen(user);
    ASSERT_NE(user, system) << f.name << ": the loosening changes nothing";
    SiteConfig c = tighten(user, system);
    c.origin = system.origin;
    EXPECT_EQ(c, system) << f.name << ": a user's file loosened the administrator's restriction";
  }
}

TEST(SiteConfigRules, PreferencesAreTheUsers) {
  SiteConfig user;
  user.mount_slave = false;
  user.shared_loop_devices = true;
  user.fuse_for_lone_gzip_images = false;
  user.always_use_nv = user.always_use_rocm = user.use_nvidia_container_cli = true;
  SiteConfig c = tighten(user, SiteConfig{});
  EXPECT_EQ(c, user);
}

TEST(SiteConfigRules, TheSystemsProgramsAreTheSystems) {
  SiteConfig user, system;
  user.cni_configuration_path = user.cni_plugin_path = "/home/me/cni";
  system.cni_configuration_path = "/site/network";
  EXPECT_EQ(tighten(user, system), system);
}

TEST(SiteConfigRules, RamfsOnlyWhereTheAdministratorSaysRamfs) {
  SiteConfig system, user;
  user.memory_fs_type = "ramfs";
  EXPECT_EQ(tighten(user, system).memory_fs_type, "tmpfs") << "a ramfs has no size limit";
  system.memory_fs_type = "ramfs";
  EXPECT_EQ(tighten(user, system).memory_fs_type, "ramfs");
  user.memory_fs_type = "tmpfs";
  EXPECT_EQ(tighten(user, system).memory_fs_type, "tmpfs") << "a user may add a limit";
}

// Every directive capsa knows: the SiteConfig field it fills, or why it has none.
TEST(SiteConfigRules, EveryDirectiveHasADecision) {
  const std::map<std::string_view, std::string_view> decided = {
      {"allow setuid", "ignored: no setuid mode"},
      {"max loop devices", "max_loop_devices"},
      {"allow pid ns", "allow_pid_ns"},
      {"allow uts ns", "allow_uts_ns"},
      {"config passwd", "ignored: the caller is always added"},
      {"config group", "ignored: the caller is always added"},
      {"config resolv_conf", "config_resolv_conf"},
      {"mount proc", "mount_proc"},
      {"mount sys", "mount_sys"},
      {"mount dev", "mount_dev"},
      {"mount devpts", "mount_devpts"},
      {"mount home", "mount_home"},
      {"mount tmp", "mount_tmp"},
      {"mount hostfs", "mount_hostfs"},
      {"bind path", "bind_paths"},
      {"user bind control", "user_bind_control"},
      {"enable fusemount", "enable_fusemount"},
      {"enable overlay", "enable_overlay"},
      {"enable underlay", "enable_underlay"},
      {"mount slave", "mount_slave"},
      {"sessiondir max size", "sessiondir_max_size_mib"},
      {"keep image seconds", "keep_image_seconds"},
      {"fuse for lone gzip images", "fuse_for_lone_gzip_images"},
      {"limit container owners", "limit_container_owners"},
      {"limit container groups", "limit_container_groups"},
      {"limit container paths", "limit_container_paths"},
      {"allow container sif", "allow_container_sif"},
      {"allow container encrypted", "allow_container_encrypted"},
      {"allow container squashfs", "allow_container_squashfs"},
      {"allow container extfs", "allow_container_extfs"},
      {"allow container dir", "allow_container_dir"},
      {"allow setuid-mount encrypted", "ignored: no setuid mode"},
      {"allow setuid-mount squashfs", "ignored: no setuid mode"},
      {"allow setuid-mount extfs", "ignored: no setuid mode"},
      {"allow net users", "ignored: CNI networks are root's alone"},
      {"allow net groups", "ignored: CNI networks are root's alone"},
      {"allow net networks", "ignored: CNI networks are root's alone"},
      {"always use nv", "always_use_nv"},
      {"use nvidia-container-cli", "use_nvidia_container_cli"},
      {"always use rocm", "always_use_rocm"},
      {"root default capabilities", "ignored: root's alone, and root's -c replaces the file"},
      {"memory fs type", "memory_fs_type"},
      {"cni configuration path", "cni_configuration_path"},
      {"cni plugin path", "cni_plugin_path"},
      {"binary path", "ignored: not used"},
      {"mksquashfs procs", "mksquashfs_procs"},
      {"mksquashfs mem", "mksquashfs_mem"},
      {"shared loop devices", "shared_loop_devices"},
      {"image driver", "ignored: not used"},
      {"download concurrency", "ignored: not used"},
      {"download part size", "ignored: not used"},
      {"download buffer size", "ignored: not used"},
      {"systemd cgroups", "ignored: not used"},
      {"apptheus socket path", "ignored: not used"},
      {"apptheus communication socket path", "ignored: not used"},
      {"allow monitoring", "ignored: not used"},
      {"allow kernel squashfs", "allow_kernel_squashfs"},
      {"allow kernel extfs", "allow_kernel_extfs"},
      {"allow ipc ns", "ignored: not used (an IPC namespace takes nothing from the host)"},
      {"allow user ns", "ignored: every unprivileged container is one"},
      {"mksquashfs path", "ignored: capsa writes squashfs itself"},
      {"cryptsetup path", "ignored: not used"},
      {"ldconfig path", "ignored: not used"},
      {"nvidia-container-cli path", "ignored: not used"},
      {"autofs bug path", "ignored: not used"},
      {"allow root capabilities", "ignored: root's alone"},
      {"sif fuse", "ignored: not used"},
  };
  for (const Directive& d : all_directives()) {
    auto it = decided.find(d.name);
    ASSERT_NE(it, decided.end()) << "\"" << d.name
                                 << "\": decide whether it restricts users (a SiteConfig field and a rule in "
                                    "tighten(), or why capsa ignores it) and add it here";
    if (it->second.starts_with("ignored")) continue;
    EXPECT_TRUE(std::any_of(fields().begin(), fields().end(), [&](const Field& f) { return f.name == it->second; }))
        << d.name << " -> " << it->second << ": no such row";
  }
}

}  // namespace
}  // namespace capsa::config
