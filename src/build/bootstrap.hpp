#pragma once
// Bootstrap agents: the stage's starting tree. docker (through the pull engine and its
// cache), localimage (a SIF, squashfs image or sandbox directory), scratch (empty), and
// debootstrap (OSVersion, MirrorURL, Include). Anything else is refused by name.

#include <optional>
#include <string>

#include "build/definition.hpp"
#include "oci/platform.hpp"
#include "pull/pull.hpp"
#include "runtime/sandbox_run.hpp"
#include "util/progress.hpp"

namespace capsa::build {

struct BootstrapOptions {
  runtime::RootMode mode = runtime::RootMode::real_root;
  std::string work_dir;        // the build directory (for a --disable-cache download)
  bool disable_cache = false;
  bool fix_perms = false;         // a docker base image's files get u+rwX (build --fix-perms)
  pull::RegistryAccess registry;  // for a docker base image
  std::optional<oci::Platform> platform;  // --arch: the base image's platform; this machine's otherwise
  Progress::Mode progress = Progress::Mode::Log;
  std::string file;            // definition file name, for messages
};

struct BootstrapResult {
  std::string base_reference;  // docker, library: the reference pulled ("" otherwise)
};

// Fills `rootfs` (which must not exist yet) for `stage`.
BootstrapResult bootstrap(const Stage& stage, const std::string& rootfs, const BootstrapOptions& options);

// Copies a sandbox directory into `rootfs` (must not exist) as the build's root.
void copy_sandbox(runtime::RootMode mode, const std::string& from, const std::string& rootfs);

// docker://REF (a reference without a scheme is docker://) or library://REF pulled
// (through the cache unless disabled) into a SIF; returns its path (in the cache, or
// `work_dir`/base.sif). Runs in a child process (the pull uses threads). `library`: the
// library's URL for library:// (a definition's Library: header).
std::string pull_base_image(const std::string& reference, const BootstrapOptions& options,
                            const std::optional<std::string>& library = std::nullopt);

}  // namespace capsa::build
