#include "build/host_ops.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

extern char** environ;

namespace capsa::build {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<char*> args = c_strings(argv);
  std::vector<char*> envp = c_strings(env);
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for " + argv.at(0));
  if (pid == 0) {
    // The interrupt handlers set a flag only: the program gets default signal actions back.
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGHUP, SIG_DFL);
    if (env.empty()) ::execvp(args[0], args.data());
    else ::execvpe(args[0], args.data(), envp.data());
    log::error({"cannot run ", argv[0], ": ", std::strerror(errno)});
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw_errno("waitpid for " + argv.at(0));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
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

BuildDirectory::BuildDirectory(const std::string& parent, const std::string& prefix, runtime::RootMode mode)
    : mode_(mode) {
  std::string pattern = parent + "/" + prefix + "XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) throw_errno("create a build directory in " + parent);
  path_ = buffer.data();
}

BuildDirectory::~BuildDirectory() {
  try {
    remove_tree(mode_, path_);
  } catch (const std::exception& e) {
    log::warning("could not remove the build directory " + path_ + ": " + e.what());
  }
}

}  // namespace capsa::build
