#pragma once
// What the runtime feature suites share: running capsa, the busybox SIF, sandboxes made
// from the host's static busybox, and the host state a failed start must leave alone.
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::testing {

std::string busybox_sif();  // the Singularity-pulled busybox image (shared fixture)

// capsa ARGS..., with `env` (NAME=VALUE) added to the environment.
test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// A sandbox directory `root` under `dir`: /bin/busybox with the applets the tests use,
// the usual mount points, /etc/passwd and /etc/group, and the caller's $HOME.
std::string make_busybox_sandbox(const test::TempDir& dir, const std::string& name = "sandbox");

std::string mount_table();  // /proc/self/mountinfo of the calling process

// Loop devices whose backing file is `image` (/sys/block/loop*/loop/backing_file).
int loop_devices_for(const std::string& image);
// Live squashfuse_ll servers of the calling user serving `image`.
int fuse_servers_for(const std::string& image);

// The mount points a container sees (field 5 of its /proc/self/mountinfo).
bool has_line(const std::string& text, const std::string& line);

}  // namespace capsa::runtime::testing
