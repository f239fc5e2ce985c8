#include "build/bootstrap.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "build/host_ops.hpp"
#include "pull/pull.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/path.hpp"

namespace capsa::build {
namespace {

std::string docker_reference(const Stage& stage, const std::string& file) {
  std::string from = stage.get("from");
  if (from.empty())
    throw FormatError(file + ":" + std::to_string(stage.line) +
                      ": Bootstrap: docker needs a From: header (expected \"From: [REGISTRY/]NAME[:TAG]\")");
  if (from.rfind("docker://", 0) == 0) from = from.substr(9);
  std::string ns = stage.get("namespace");
  std::string registry = stage.get("registry");
  if (!ns.empty()) from = ns + "/" + from;
  if (!registry.empty()) from = registry + "/" + from;
  return from;
}

}  // namespace

std::string pull_base_image(const std::string& reference, const BootstrapOptions& options) {
  pull::PullOptions pull;
  pull.reference = "docker://" + reference;
  pull.registry = options.registry;
  try {
    if (!options.disable_cache) return pull::cached_sif_in_subprocess(pull, options.progress);
    pull.disable_cache = true;
    pull.force = true;
    pull.output = options.work_dir + "/base.sif";
    pull::pull_in_subprocess(pull, options.progress);
  } catch (const Error&) {
    throw_if_interrupted();
    throw;
  }
  throw_if_interrupted();
  return *pull.output;
}

void copy_sandbox(runtime::RootMode mode, const std::string& from, const std::string& rootfs) {
  // cp: a tree copy that keeps links, modes and times is what coreutils does well. A
  // namespaced build cannot give files to host ids it does not map: they become root's.
  std::vector<std::string> argv = {"cp", "-a"};
  if (mode != runtime::RootMode::real_root) argv.push_back("--no-preserve=ownership");
  argv.insert(argv.end(), {"--", from + "/.", rootfs});
  int status = runtime::run_in_user_namespace(mode, [&] {
    if (::mkdir(rootfs.c_str(), 0755) != 0) throw_errno("create " + rootfs);
    return run_program(argv);
  });
  if (status != 0) throw Error("copying the sandbox " + from + " failed (exit status " + std::to_string(status) + ")");
}

BootstrapResult bootstrap(const Stage& stage, const std::string& rootfs, const BootstrapOptions& options) {
  const std::string agent = stage.bootstrap();
  const std::string at = options.file + ":" + std::to_string(stage.line) + ": ";
  BootstrapResult result;
  if (agent == "docker") {
    result.base_reference = docker_reference(stage, options.file);
    std::string sif = pull_base_image(result.base_reference, options);
    runtime::unpack_sandbox(sif, rootfs, options.mode);
    if (options.disable_cache) ::unlink(sif.c_str());
  } else if (agent == "localimage") {
    std::string from = stage.get("from");
    if (from.empty()) throw FormatError(at + "Bootstrap: localimage needs a From: header (expected a SIF or a sandbox)");
    if (!path_exists(from, FollowLinks::yes))
      throw Error(at + "From: " + from + ": no such image (expected a SIF file or a sandbox directory)");
    if (is_directory(from)) copy_sandbox(options.mode, from, rootfs);
    else runtime::unpack_sandbox(from, rootfs, options.mode);
  } else if (agent == "scratch") {
    as_build_root(options.mode, "create " + rootfs, [&] {
      if (::mkdir(rootfs.c_str(), 0755) != 0) throw_errno("create " + rootfs);
      ::chmod(rootfs.c_str(), 0755);
    });
  } else if (agent == "debootstrap") {
    std::string release = stage.get("osversion");
    if (release.empty()) throw FormatError(at + "Bootstrap: debootstrap needs OSVersion: (expected e.g. bookworm)");
    std::string mirror = stage.get("mirrorurl");
    if (mirror.empty()) throw FormatError(at + "Bootstrap: debootstrap needs MirrorURL: (expected the mirror's URL)");
    std::vector<std::string> argv = {"debootstrap", "--variant=minbase"};
    std::string include = stage.get("include");
    for (char& c : include)
      if (c == ' ') c = ',';
    if (!include.empty()) argv.push_back("--include=" + include);
    argv.insert(argv.end(), {release, rootfs, mirror});
    int status = run_program_as_build_root(options.mode, argv);
    if (status != 0)
      throw Error(at + "debootstrap " + release + " from " + mirror + " failed (exit status " +
                  std::to_string(status) + ", see its log in the message above)");
  } else {
    throw FormatError(at + "Bootstrap: " + agent +
                      " is not supported by capsa (supported: docker, localimage, scratch, debootstrap)");
  }
  return result;
}

}  // namespace capsa::build
