#include "build/stage_files.hpp"

#include <glob.h>

#include <vector>

#include "build/host_ops.hpp"
#include "util/error.hpp"

namespace capsa::build {
namespace {

bool has_glob(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

// The existing paths `pattern` names (glob patterns allowed, as Apptainer allows them).
std::vector<std::string> expand(const std::string& pattern) {
  glob_t matches{};
  int flags = has_glob(pattern) ? 0 : GLOB_NOESCAPE;
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), flags, nullptr, &matches) == 0)
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) out.emplace_back(matches.gl_pathv[i]);
  ::globfree(&matches);
  return out;
}

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void copy_files(runtime::RootMode mode, const std::string& rootfs, const FilesBlock& block,
                const std::string& from_rootfs, const std::string& file) {
  for (const FileCopy& copy : block.copies) {
    std::string where = file + ":" + std::to_string(copy.line) + ": " + block.section;
    std::vector<std::string> sources;
    if (from_rootfs.empty()) {
      sources = expand(copy.source);
      if (sources.empty())
        throw Error(where + ": " + copy.source + " does not exist on the host (expected an existing file or "
                                                  "directory, relative to the current directory)");
    } else {
      std::string inside = copy.source.empty() || copy.source[0] != '/' ? "/" + copy.source : copy.source;
      sources = has_glob(inside) ? expand(from_rootfs + inside) : expand(resolve_in_root(from_rootfs, inside));
      if (sources.empty())
        throw Error(where + " from " + block.from_stage + ": " + copy.source + " does not exist in that stage");
    }
    std::string destination = copy.destination.empty() || copy.destination[0] != '/' ? "/" + copy.destination
                                                                                     : copy.destination;
    std::string target = resolve_in_root(rootfs, destination);
    if (destination.size() > 1 && destination.back() == '/') target += "/";
    // Host files come as the build's root makes them; a stage's keep their owners and links.
    std::vector<std::string> argv = from_rootfs.empty() ? std::vector<std::string>{"cp", "-fLr", "--"}
                                                        : std::vector<std::string>{"cp", "-fa", "--"};
    argv.insert(argv.end(), sources.begin(), sources.end());
    argv.push_back(target);
    int status = runtime::run_in_user_namespace(mode, [&] {
      int made = run_program({"mkdir", "-p", "--", parent_of(target.back() == '/' ? target.substr(0, target.size() - 1)
                                                                                   : target)});
      if (made != 0) return made;
      return run_program(argv);
    });
    if (status != 0)
      throw Error(where + ": copying " + copy.source + " to " + copy.destination + " failed (exit status " +
                  std::to_string(status) + ", see the message above)");
  }
}

}  // namespace capsa::build
