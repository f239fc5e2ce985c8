#pragma once
// Work a build does on the host side of a sandbox (copies, scripts, removal), each in a
// child process that is root the way the build is (runtime::run_in_user_namespace): as
// real root, in the subuid namespace, or in the emulated one. Files the build creates
// are then owned by the container's root however the build runs.

#include <functional>
#include <string>
#include <vector>

#include "runtime/sandbox_run.hpp"

namespace capsa::build {

// Runs a program (PATH lookup) with `env` (the caller's environment when empty), waits,
// and returns its exit status (128+signal when killed).
int run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

// Runs `body` as the build's root; rethrows its Error. Throws when it returns non-zero
// without one, naming `what`.
void as_build_root(runtime::RootMode mode, const std::string& what, const std::function<void()>& body);

// Like run_program, in the build's namespace.
int run_program_as_build_root(runtime::RootMode mode, const std::vector<std::string>& argv,
                              const std::vector<std::string>& env = {});

// `path` (absolute, as seen inside the container) resolved inside `rootfs` the way the
// container would resolve it: absolute symlinks restart at rootfs and ".." stops there, so
// the host path returned never leads out of rootfs. Missing trailing components are kept
// as written (a %files destination may not exist yet), which is why this is not
// open_in_root, whose descriptor walk needs every component to exist.
std::string resolve_in_root(const std::string& rootfs, const std::string& path);

// build --fix-perms: gives the owner read and write on every file and directory under
// `rootfs`, and search/execute where anyone already had it or it is a directory (u+rwX),
// as the build's root; symlinks are left alone.
void give_owner_access(runtime::RootMode mode, const std::string& rootfs);

// rm -rf as the build's root (files of a subuid build belong to ids the caller is not).
void remove_tree(runtime::RootMode mode, const std::string& path);

// A fresh directory "<parent>/<prefix>XXXXXX", removed with its contents (as the build's
// root) when the object goes, also while an error or an interruption unwinds.
class BuildDirectory {
 public:
  // `keep` (--no-cleanup): the destructor leaves the directory and says where it is.
  BuildDirectory(const std::string& parent, const std::string& prefix, runtime::RootMode mode, bool keep = false);
  ~BuildDirectory();
  BuildDirectory(const BuildDirectory&) = delete;
  BuildDirectory& operator=(const BuildDirectory&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  runtime::RootMode mode_;
  bool keep_ = false;
};

}  // namespace capsa::build
