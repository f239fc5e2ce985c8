#include "build/bootstrap.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/source.hpp"
#include "build/download.hpp"
#include "build/host_ops.hpp"
#include "pull/pull.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
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

// A new file with `content` and `mode` (never through an existing one).
void write_new_file(const std::string& path, const std::string& content, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw_errno("create " + path);
  write_all(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(content.data()), content.size()));
  if (::fchmod(fd.get(), mode) != 0) throw_errno("chmod " + path);
}

}  // namespace

std::string pull_base_image(const std::string& reference, const BootstrapOptions& options,
                            const std::optional<std::string>& library) {
  pull::PullOptions pull;
  pull.reference = reference.find("://") == std::string::npos && !archive::is_local_source(reference)
                       ? "docker://" + reference
                       : reference;
  pull.registry = options.registry;
  pull.library = library;
  pull.platform = options.platform;
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

namespace {

// Bootstrap: busybox, as Apptainer's agent lays it out (sources/conveyorPacker_busybox.go):
// the binary from MirrorURL as /bin/busybox, its applet links in /bin, a minimal
// /etc/passwd, /etc/group and /etc/hosts. The downloaded program never runs on the host:
// `busybox --install` runs inside the new root, as %post would.
void bootstrap_busybox(const std::string& mirror, const std::string& rootfs, const BootstrapOptions& options) {
  const std::string downloaded = options.work_dir + "/busybox";
  download_file(mirror, downloaded);
  as_build_root(options.mode, "create " + rootfs, [&] {
    for (const std::string dir : {"", "/bin", "/etc", "/root", "/tmp", "/proc", "/sys", "/dev"}) {
      const std::string path = rootfs + dir;
      if (::mkdir(path.c_str(), dir == "/tmp" ? 01777 : 0755) != 0) throw_errno("create " + path);
    }
    ::chmod((rootfs + "/tmp").c_str(), 01777);
    write_new_file(rootfs + "/etc/passwd", "root:!:0:0:root:/root:/bin/sh\n", 0644);
    write_new_file(rootfs + "/etc/group", "root:x:0:\n", 0644);
    write_new_file(rootfs + "/etc/hosts",
                   "127.0.0.1   localhost localhost.localdomain localhost4 localhost4.localdomain4\n", 0644);
    write_new_file(rootfs + "/bin/busybox", read_whole_file(downloaded), 0755);
  });
  ::unlink(downloaded.c_str());
  runtime::SandboxCommand install;
  install.rootfs = rootfs;
  install.argv = {"/bin/busybox", "--install", "/bin"};
  install.env = {"PATH=/bin"};
  install.mode = options.mode;
  int status = runtime::run_in_sandbox(install);
  if (status != 0)
    throw Error("`busybox --install` from " + mirror + " failed (exit status " + std::to_string(status) +
                "): is it a static busybox for this machine?");
}

}  // namespace

BootstrapResult bootstrap(const Stage& stage, const std::string& rootfs, const BootstrapOptions& options) {
  const std::string agent = stage.bootstrap();
  const std::string at = options.file + ":" + std::to_string(stage.line) + ": ";
  BootstrapResult result;
  if (agent == "docker") {
    result.base_reference = docker_reference(stage, options.file);
    std::string sif = pull_base_image(result.base_reference, options);
    runtime::unpack_sandbox(sif, rootfs, options.mode);
    if (options.disable_cache) ::unlink(sif.c_str());
    if (options.fix_perms) give_owner_access(options.mode, rootfs);
  } else if (agent == "library") {
    // Apptainer's library agent: From: [library://]ENTITY/COLLECTION/CONTAINER[:TAG], and
    // an optional Library: URL header naming the library (else --library's environment).
    std::string from = stage.get("from");
    if (from.empty())
      throw FormatError(at + "Bootstrap: library needs a From: header (expected ENTITY/COLLECTION/CONTAINER[:TAG])");
    result.base_reference = from.rfind("library://", 0) == 0 ? from : "library://" + from;
    std::string library = stage.get("library");
    std::string sif = pull_base_image(result.base_reference, options,
                                      library.empty() ? std::nullopt : std::optional<std::string>(library));
    runtime::unpack_sandbox(sif, rootfs, options.mode);
    if (options.disable_cache) ::unlink(sif.c_str());
  } else if (agent == "docker-archive" || agent == "oci-archive" || agent == "oci" || agent == "oras") {
    // From: FILE[:NAME:TAG] (docker-archive), FILE[:TAG] (oci-archive), DIR[:TAG] (oci), as
    // Apptainer prefixes the agent to it; oras: From: [oras://]REGISTRY/REPO:TAG, a SIF.
    std::string from = stage.get("from");
    if (from.empty())
      throw FormatError(at + "Bootstrap: " + agent + " needs a From: header (expected " +
                        (agent == "oras"          ? "REGISTRY/REPOSITORY:TAG"
                         : agent == "oci"         ? "DIR[:TAG]"
                         : agent == "oci-archive" ? "FILE[:TAG]"
                                                  : "FILE[:NAME:TAG]") +
                        ")");
    if (agent == "oras")
      result.base_reference = from.starts_with("oras://") ? from : "oras://" + from;
    else
      result.base_reference = from.starts_with(agent + ":") ? from : agent + ":" + from;
    std::string sif = pull_base_image(result.base_reference, options);
    runtime::unpack_sandbox(sif, rootfs, options.mode);
    if (options.disable_cache) ::unlink(sif.c_str());
    if (options.fix_perms) give_owner_access(options.mode, rootfs);
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
  } else if (agent == "busybox") {
    std::string mirror = stage.get("mirrorurl");
    if (mirror.empty())
      throw FormatError(at + "Bootstrap: busybox needs MirrorURL: (expected the URL of a static busybox binary)");
    bootstrap_busybox(mirror, rootfs, options);
  } else {
    throw FormatError(
        at + "Bootstrap: " + agent +
        " is not supported by capsa (supported: docker, docker-archive, oci-archive, oci, oras, library, localimage, "
        "scratch, debootstrap, busybox)");
  }
  return result;
}

}  // namespace capsa::build
