// The typed configuration and the rule that a user's file cannot loosen the
// administrator's: config/site_config.hpp.
#include "config/site_config.hpp"

#include <gtest/gtest.h>

#include "convert/squashfs_writer.hpp"

namespace capsa::config {
namespace {

SiteConfig from(const std::string& text) { return site_config_from(parse_config(text, "t.conf", nullptr)); }

TEST(SiteConfig, NoFileHasApptainersDefaults) {
  SiteConfig c = site_config_from(ConfigFile{});
  EXPECT_EQ(c.bind_paths, (std::vector<std::string>{"/etc/localtime", "/etc/hosts"}));
  EXPECT_TRUE(c.mount_home && c.mount_tmp && c.mount_proc && c.mount_sys && c.mount_devpts && c.user_bind_control);
  EXPECT_EQ(c.mount_dev, "yes");
  EXPECT_EQ(c.enable_overlay, "yes");
  EXPECT_EQ(c.max_loop_devices, 256u);
  EXPECT_EQ(c.sessiondir_max_size_mib, 64u);
  EXPECT_EQ(c.memory_fs_type, "tmpfs");
  EXPECT_TRUE(c.limit_container_paths.empty());
  EXPECT_FALSE(c.always_use_nv);
  EXPECT_EQ(c, SiteConfig{});
}

TEST(SiteConfig, AFileWithoutBindPathHasNone) {
  // Apptainer's rule (parser.go GetConfig): list defaults only apply without a file.
  EXPECT_TRUE(from("mount home = yes\n").bind_paths.empty());
}

TEST(SiteConfig, ValuesOfAFile) {
  SiteConfig c = from(
      "bind path = /scratch\nbind path = /work:/data\nmount home = no\nuser bind control = no\n"
      "enable overlay = no\nmax loop devices = 8\nlimit container paths = /a, /b\nallow container dir = no\n"
      "always use nv = yes\nmemory fs type = ramfs\nsessiondir max size = 16\nmksquashfs procs = 2\n"
      "mount dev = minimal\nmount home = yes\n");
  EXPECT_EQ(c.bind_paths, (std::vector<std::string>{"/scratch", "/work:/data"}));
  EXPECT_FALSE(c.mount_home) << "the first line counts";
  EXPECT_FALSE(c.user_bind_control);
  EXPECT_EQ(c.enable_overlay, "no");
  EXPECT_EQ(c.max_loop_devices, 8u);
  EXPECT_EQ(c.limit_container_paths, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_FALSE(c.allow_container_dir);
  EXPECT_TRUE(c.allow_container_sif);
  EXPECT_TRUE(c.always_use_nv);
  EXPECT_EQ(c.memory_fs_type, "ramfs");
  EXPECT_EQ(c.sessiondir_max_size_mib, 16u);
  EXPECT_EQ(c.mksquashfs_procs, 2u);
  EXPECT_EQ(c.mount_dev, "minimal");
}

TEST(SiteConfig, AUsersFileCannotLoosenTheAdministratorsRestrictions) {
  SiteConfig system = from(
      "bind path = /etc/hosts\nuser bind control = no\nenable overlay = no\nmount home = no\nmount dev = minimal\n"
      "allow container dir = no\nlimit container paths = /site\nmax loop devices = 4\nsessiondir max size = 16\n"
      "mksquashfs procs = 2\nmksquashfs mem = 1G\nallow pid ns = no\nallow kernel squashfs = no\n");
  SiteConfig user = from(
      "bind path = /anything\nuser bind control = yes\nenable overlay = yes\nmount home = yes\nmount dev = yes\n"
      "allow container dir = yes\nlimit container paths = /\nmax loop devices = 1000\nsessiondir max size = 4096\n"
      "mksquashfs procs = 0\nmksquashfs mem = 8G\nallow pid ns = yes\nallow kernel squashfs = yes\n"
      "always use nv = yes\nmemory fs type = ramfs\n");
  SiteConfig c = tighten(user, system);
  EXPECT_EQ(c.bind_paths, std::vector<std::string>{"/etc/hosts"}) << "no binds of the user's with user binds off";
  EXPECT_FALSE(c.user_bind_control);
  EXPECT_EQ(c.enable_overlay, "no");
  EXPECT_FALSE(c.mount_home);
  EXPECT_EQ(c.mount_dev, "minimal");
  EXPECT_FALSE(c.allow_container_dir);
  EXPECT_EQ(c.limit_container_paths, std::vector<std::string>{"/site"});
  EXPECT_EQ(c.max_loop_devices, 4u);
  EXPECT_EQ(c.sessiondir_max_size_mib, 16u);
  EXPECT_EQ(c.mksquashfs_procs, 2u);
  EXPECT_EQ(c.mksquashfs_mem, "1G");
  EXPECT_FALSE(c.allow_pid_ns);
  EXPECT_FALSE(c.allow_kernel_squashfs);
  // What restricts nothing is the user's to choose; a ramfs (no size limit) is not.
  EXPECT_TRUE(c.always_use_nv);
  EXPECT_EQ(c.memory_fs_type, "tmpfs");
}

TEST(SiteConfig, AUsersFileMayTightenAndAddWhatIsAllowed) {
  SiteConfig system = from("bind path = /etc/hosts\nmksquashfs procs = 0\n");
  SiteConfig user = from(
      "bind path = /scratch\nmount tmp = no\nenable overlay = no\nlimit container paths = /mine\n"
      "mksquashfs procs = 3\nmax loop devices = 2\n");
  SiteConfig c = tighten(user, system);
  EXPECT_EQ(c.bind_paths, std::vector<std::string>{"/scratch"}) << "user binds are allowed: the file may bind too";
  EXPECT_FALSE(c.mount_tmp);
  EXPECT_EQ(c.enable_overlay, "no");
  EXPECT_EQ(c.limit_container_paths, std::vector<std::string>{"/mine"});
  EXPECT_EQ(c.mksquashfs_procs, 3u);
  EXPECT_EQ(c.max_loop_devices, 2u);
}

TEST(SiteConfig, MksquashfsProcsCapsTheCompressionThreads) {
  SiteConfig limited;
  limited.mksquashfs_procs = 1;
  set_active_site_config(limited);
  EXPECT_EQ(convert::compression_workers(0), 1u);
  EXPECT_EQ(convert::compression_workers(8), 1u);
  set_active_site_config(SiteConfig{});
  EXPECT_EQ(convert::compression_workers(8), 8u) << "0: no limit";
  EXPECT_GE(convert::compression_workers(0), 1u);
}

}  // namespace
}  // namespace capsa::config
