#pragma once
// `capsa build TARGET SOURCE`: a definition file, a docker:// image, a SIF or a sandbox
// directory into a SIF or (--sandbox) a directory, in Apptainer's order and semantics
// (docs/build.md). Per stage:
//   bootstrap -> %files from STAGE -> %setup (host) -> %files (host) -> %post (inside, as
//   root-in-the-container) -> /.singularity.d metadata -> %test;
// then the last stage is packed into the SIF (or renamed to the sandbox target).

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "convert/pack.hpp"
#include "encryption/key_material.hpp"
#include "oci/platform.hpp"
#include "pull/pull.hpp"
#include "runtime/bind_spec.hpp"
#include "util/error.hpp"
#include "util/progress.hpp"

namespace capsa::build {

struct BuildOptions {
  std::string target;                          // TARGET.sif or, with sandbox, a directory
  std::string source;                          // def file, docker://REF, SIF, or sandbox directory
  bool sandbox = false;                        // --sandbox
  bool force = false;                          // --force: replace an existing target
  bool update = false;                         // --update: the last stage starts from the sandbox TARGET
  bool fakeroot = false;                       // --fakeroot (implied for an unprivileged build)
  bool notest = false;                         // --notest
  std::set<std::string> sections;              // --section: empty = all
  std::map<std::string, std::string> build_args;
  bool warn_unused_build_args = false;
  std::vector<runtime::BindSpec> binds;        // --bind, for %post and %test
  bool nv = false;                             // --nv, for %post and %test
  bool rocm = false;                           // --rocm, for %post and %test
  bool disable_cache = false;
  bool fix_perms = false;         // --fix-perms: u+rwX on everything a docker base image brings
  pull::RegistryAccess registry;  // --nohttps and credentials, for docker sources
  std::optional<oci::Platform> platform;  // --arch/--arch-variant: of docker images, recorded in the SIF
  // --compression and --mksquashfs-args (convert/mksquashfs_args.hpp); `repack` when the
  // latter was given: then a docker:// source is packed here too, not pulled as it is.
  convert::PackOptions pack;
  bool repack = false;
  bool json = false;            // --json: the definition file is Apptainer's JSON form (definition_json.hpp)
  bool writable_tmpfs = false;  // --writable-tmpfs: %test writes to a tmpfs over the image, not the image
  bool nvccli = false;          // --nvccli: nvidia-container-cli sets the driver up for %post and %test
  std::int64_t time = 0;                       // image time (SOURCE_DATE_EPOCH when set)
  std::string capsa_version;
  std::string tmpdir;                          // where build directories go; "" = $TMPDIR or /tmp
  // --no-cleanup: the build directory is kept (and its path printed), for debugging.
  bool no_cleanup = false;
  // Apptainer's fakeroot fall-backs: --ignore-subuid (no subordinate ids: the emulated
  // mode), --ignore-fakeroot-command (the emulated mode without its seccomp emulation),
  // --ignore-userns (no user namespace: root builds as root; anyone else cannot build).
  bool ignore_subuid = false;
  bool ignore_fakeroot_command = false;
  bool ignore_userns = false;
  // --encrypt (or --passphrase / --pem-path): the key to encrypt the image with
  // (build/encrypted_sif.hpp); nullopt: a plain image.
  std::optional<encryption::KeyMaterial> encryption_key;
};

struct BuildResult {
  std::string target;
  std::vector<std::string> warnings;
};

// Throws capsa::Error (FormatError for a bad definition file) and leaves nothing behind:
// no target, no temporary directory. A %post that fails throws BuildScriptError.
BuildResult build(const BuildOptions& options, Progress& progress);

// The CLI exits with the script's status (as a shell would for a failed command); one
// that does not fit an exit status (0, or above 255) exits 1.
class BuildScriptError : public StatusError {
 public:
  BuildScriptError(const std::string& message, int exit_status)
      : StatusError(message, exit_status > 0 && exit_status <= 255 ? exit_status : 1) {}
};

}  // namespace capsa::build
