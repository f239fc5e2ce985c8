#include "build/host_ops.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ftw.h>

#include <cerrno>
#include <cstdlib>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "util/run_program.hpp"

namespace capsa::build {

namespace {

// nftw's callback for give_owner_access (nftw passes no user data, hence a function).
int add_owner_access(const char* path, const struct stat* st, int type, struct FTW*) {
  if (type == FTW_SL || type == FTW_SLN) return 0;
  mode_t mode = st->st_mode & 07777;
  mode_t wanted = mode | S_IRUSR | S_IWUSR;
  if (S_ISDIR(st->st_mode) || (mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0) wanted |= S_IXUSR;
  if (wanted != mode && ::chmod(path, wanted) != 0) throw_errno(std::string("--fix-perms: chmod ") + path);
  return 0;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  // exec gives the program default actions for the signals capsa's interrupt handlers catch.
  Command command{.argv = argv};
  if (!env.empty()) command.env = env;
  return run_to_end(command).code();
}

void as_build_root(runtime::RootMode mode, const std::string& what, const std::function<void()>& body) {
  int status = runtime::run_in_user_namespace(mode, [&] {
    body();
    return 0;
  });
  if (status != 0) throw Error(what + ": failed (exit status " + std::to_string(status) + ")");
}

int run_program_as_build_root(runtime::RootMode mode, const std::vector<std::string>& argv,
                              const std::vector<std::string>& env) {
  return runtime::run_in_user_namespace(mode, [&] { return run_program(argv, env); });
}

std::string resolve_in_root(const std::string& rootfs, const std::string& path) {
  std::vector<std::string> pending;  // components still to walk, last one first
  auto push = [&](const std::string& p) {
    std::vector<std::string> parts = path_components(p);
    pending.insert(pending.end(), parts.rbegin(), parts.rend());
  };
  push(path);
  std::vector<std::string> resolved;  // components below rootfs, all real directories/files
  int hops = 0;
  while (!pending.empty()) {
    std::string name = pending.back();
    pending.pop_back();
    if (name == ".") continue;
    if (name == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    std::string here = rootfs;
    for (const std::string& c : resolved) here += "/" + c;
    here += "/" + name;
    struct stat st {};
    if (::lstat(here.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      if (++hops > 40) throw Error(path + ": too many levels of symbolic links in the image");
      char target[PATH_MAX];
      ssize_t n = ::readlink(here.c_str(), target, sizeof target - 1);
      if (n < 0) throw_errno("readlink " + here);
      std::string link(target, static_cast<std::size_t>(n));
      if (!link.empty() && link[0] == '/') resolved.clear();
      push(link);
      continue;
    }
    resolved.push_back(name);
  }
  std::string out = rootfs;
  for (const std::string& c : resolved) out += "/" + c;
  return out;
}

void give_owner_access(runtime::RootMode mode, const std::string& rootfs) {
  // Parents before children (no FTW_DEPTH): a directory becomes searchable before nftw
  // descends into it.
  as_build_root(mode, "--fix-perms on " + rootfs, [&] {
    if (::nftw(rootfs.c_str(), add_owner_access, 64, FTW_PHYS) != 0) throw_errno("--fix-perms: walking " + rootfs);
  });
}

void remove_tree(runtime::RootMode mode, const std::string& path) {
  try {
    runtime::remove_sandbox(path, mode);
    return;
  } catch (const Error&) {
  }
  // A namespace that could not be entered: the caller's own rm removes what it may, and
  // the caller's next check reports what is left.
  run_program({"rm", "-rf", "--one-file-system", "--", path});
}

BuildDirectory::BuildDirectory(const std::string& parent, const std::string& prefix, runtime::RootMode mode, bool keep)
    : mode_(mode), keep_(keep) {
  std::string pattern = parent + "/" + prefix + "XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) throw_errno("create a build directory in " + parent);
  path_ = buffer.data();
}

BuildDirectory::~BuildDirectory() {
  if (keep_) {
    // As Apptainer's --no-cleanup, whether the build worked or not.
    log::info("Build performed with no clean up option, build directory kept at: " + path_);
    return;
  }
  try {
    remove_tree(mode_, path_);
  } catch (const std::exception& e) {
    log::warning("could not remove the build directory " + path_ + ": " + e.what());
  }
}

}  // namespace capsa::build
