#pragma once
// Shared by the run-command suites: running capsa with a chosen environment, and small
// SIF images made on the spot (static busybox plus the files a test needs, packed with
// gensquashfs and siftool as a Singularity-built image would be).
#include <sys/types.h>

#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::testing {

// The Singularity 3.8.1-pulled busybox image (tests/fixtures/upstream/sif/real).
std::string busybox_sif();

// `capsa ARGS...` with `env` entries "NAME=VALUE" added to (or "-u NAME" removed from)
// the test's own environment; "-i" starts from an empty one. A non-empty `cwd` is where
// it starts (the suite's own working directory is not fixed: other test cases move it).
test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                          const std::string& stdin_data = "", const std::string& cwd = "");

// The folder of the running test binary: in the build tree, which no default bind shows,
// and readable by the test user.
std::string test_binary_directory();

struct ImageFile {
  std::string path;     // absolute, inside the image
  std::string content;
  mode_t mode = 0644;
};

// dir/NAME.sif: busybox as /bin/sh (and its applets), /etc/passwd and /etc/group with
// root and nobody, the /.singularity.d directories, plus `files` (which may replace any
// of those). Symlinks are given as files whose content starts with "->".
std::string make_image(const test::TempDir& dir, const std::string& name, const std::vector<ImageFile>& files);
// The same tree as a sandbox directory, dir/NAME-rootfs.
std::string make_sandbox(const test::TempDir& dir, const std::string& name, const std::vector<ImageFile>& files);

// A fresh folder in the caller's real home (from the user database), holding a file
// `marker` with "host home\n": a home that no other default bind (/tmp, /var/tmp) shows.
class HomeDir {
 public:
  HomeDir();
  ~HomeDir();
  HomeDir(const HomeDir&) = delete;
  HomeDir& operator=(const HomeDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Readlink of /proc/self/ns/NAME in this process, e.g. "net:[4026531840]".
std::string own_namespace(const std::string& name);

// The lines of `text`.
std::vector<std::string> lines_of(const std::string& text);

// A sandbox directory `root` under `dir`: /bin/busybox with the applets the tests use,
// the usual mount points, /etc/passwd and /etc/group, and the caller's $HOME.
std::string make_busybox_sandbox(const test::TempDir& dir, const std::string& name = "sandbox");

std::string mount_table();  // /proc/self/mountinfo of the calling process, less the tests' own host mounts

// Loop devices whose backing file is `image` (/sys/block/loop*/loop/backing_file).
int loop_devices_for(const std::string& image);
// Live processes of the calling user that name `image` on their command line: the FUSE
// server of a container (capsa's own, a forked capsa, or squashfuse_ll) and the container.
int fuse_servers_for(const std::string& image);

// Whether `text` has `line` as one of its lines.
bool has_line(const std::string& text, const std::string& line);

// `capsa -c CONF exec -B SYNC:/sync IMAGE sh -c ...` in the background (its output to
// /dev/null): the container reports ready by making sync/ready.NAME (sync/ready when NAME
// is empty), then waits for sync/go. Returns its pid.
pid_t start_waiting_container(const std::string& conf, const std::string& image, const std::string& sync,
                              const std::string& name = "");

}  // namespace capsa::runtime::testing
