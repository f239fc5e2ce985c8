#pragma once
// `capsa exec|run|shell|test IMAGE [ARGS...]`: image -> namespaces -> mounts -> exec.
// The command replaces capsa (no supervisor process), so its exit status and signals are
// its own; the only helper that may live on, the FUSE server, dies with it. A private PID
// namespace (--pid, --containall) is the exception: it needs an init, and capsa stays to
// forward signals (pid_namespace.hpp).
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "encryption/key_material.hpp"
#include "runtime/bind_spec.hpp"
#include "runtime/capabilities.hpp"
#include "runtime/cgroups/cgroup_limits.hpp"
#include "runtime/fakeroot_action.hpp"
#include "runtime/overlay_spec.hpp"
#include "runtime/private_namespaces.hpp"
#include "runtime/site_options.hpp"
#include "util/file_identity.hpp"

namespace capsa::runtime {

struct ActionRequest {
  std::string action;              // exec, run, shell, test
  std::string image;               // a SIF file or a sandbox directory
  std::vector<std::string> args;   // the command (exec) or the arguments (run, test, shell)
  std::vector<BindSpec> binds;
  std::string home;                // --home SRC[:DEST]; empty: the caller's home
  std::string pwd;                 // --pwd: working directory inside
  std::string workdir;             // --workdir
  std::string shell;               // --shell for `shell`
  std::vector<std::string> env_args;
  std::vector<std::string> env_files;
  bool contain = false;
  PrivateNamespaces namespaces;       // --pid, --ipc, --uts, --hostname, --net (--containall: pid and ipc)
  std::vector<std::string> networks;  // --network types (with --net): none, or CNI networks (root)
  std::vector<std::string> network_args;  // --network-args: [NETWORK:]KEY=VALUE[;...] for the CNI plugins
  std::vector<std::string> dns;       // --dns: the container's resolv.conf names these servers
  bool no_umask = false;              // --no-umask: 0022 inside instead of the caller's umask
  bool no_eval = false;               // --no-eval: injected variables are taken literally
  std::vector<std::string> scratch;   // -S/--scratch: absolute paths that get a fresh directory each
  std::vector<std::string> libraries;  // --containlibs: host libraries bound into /.singularity.d/libs
  CapabilityRequest capabilities;      // --no-privs, --keep-privs, --add-caps, --drop-caps
  std::string seccomp_profile;         // --security seccomp:PATH: an OCI seccomp profile
  std::string app;                     // --app: a SCIF app of the image (/scif/apps/NAME)
  bool unsquash = false;               // --unsquash: run a SIF from a temporary sandbox (temporary_image.hpp)
  std::string tmpdir;                  // --tmpdir: where that sandbox goes
  std::string temporary_directory;     // removed after the run: holds a --disable-cache pull's image
  bool userns = false;             // -u/--userns: a user namespace even for root
  bool fakeroot = false;           // -f/--fakeroot: uid 0 of a user namespace (fakeroot_action.hpp)
  FakerootRequest fakeroot_options;  // --ignore-subuid, --ignore-fakeroot-command
  bool cleanenv = false;
  bool no_home = false;
  bool writable_tmpfs = false;
  bool underlay = false;      // --underlay: a root of binds instead of an overlay (underlay_root.hpp)
  bool allow_setuid = false;  // --allow-setuid: see setuid_allowed()
  // --runscript-timeout: how long the action script may take to reach the action
  // (script_watchdog.hpp); unset: Apptainer's default, one minute.
  std::optional<std::chrono::nanoseconds> runscript_timeout;
  bool writable = false;              // --writable: a sandbox read-write, or a SIF's ext3 overlay partition
  std::vector<OverlaySpec> overlays;  // -o/--overlay, in the order given
  std::vector<std::string> no_mount;  // --no-mount values (comma lists allowed)
  bool nv = false;                 // --nv: the host's NVIDIA driver (docs/gpu.md)
  bool nvccli = false;             // --nvccli: the same through nvidia-container-cli
  bool rocm = false;               // --rocm: the host's AMD ROCm driver
  std::vector<std::string> cdi_devices;  // --device VENDOR/CLASS=NAME (CDI, docs/gpu.md)
  std::vector<std::string> cdi_dirs;     // --cdi-dirs; empty: /etc/cdi, /var/run/cdi
  std::vector<std::string> fusemounts;   // --fusemount "host:|container:PROGRAM ARGS... MOUNTPOINT"
  bool sharens = false;                  // --sharens: share one hidden instance (shared_namespaces.hpp)
  pid_t end_with = 0;                    // an instance that ends with this process (--sharens' parent)
  CgroupFlags cgroups;                   // --apply-cgroups and the limit flags (--memory, --cpus...)
  SiteOptions site;                      // from the administrator's configuration (site_policy.hpp)
  // The file execution control or the site's image restrictions judged (ecl/enforce.hpp,
  // site_policy.hpp): the run mounts that file or none.
  std::optional<FileIdentity> image_checked;
  // Execution control judged the image's bytes (its signatures): they must stay as they
  // were while it runs (image_lease.hpp).
  bool image_content_checked = false;
  // --passphrase, --pem-path or their variables: the key of an encrypted SIF (docs/encryption.md).
  std::optional<encryption::KeyMaterial> encryption_key;
  // With a PEM key: opens the secret wrapped in the image's CryptoMessage (the PEM text)
  // with it (encryption/wrapped_key.hpp). Set by capsa-full (cli/encryption_key_full.cpp):
  // the lean runner links no OpenSSL and hands runs with a PEM key to capsa-full.
  std::function<std::string(const std::string& wrapped, const std::string& image)> unwrap_key;
};

// Real root without a user namespace: the mounts are the host's own (loop devices,
// kernel squashfs) and root's privileges are real.
bool runs_privileged(const ActionRequest& request);

// --allow-setuid takes effect: in a privileged run only (the CLI refuses it to anyone
// else), no nosuid on the image and no no_new_privs for the command.
bool setuid_allowed(const ActionRequest& request);

// The command's environment as launch composes it (environment.hpp, plus the GPU
// selection, the app's name, --no-eval): a container joining a kept image gets the same.
struct ComposedEnvironment;
ComposedEnvironment compose_container_environment(const ActionRequest& request,
                                                  const std::map<std::string, std::string>& host,
                                                  const std::string& home);

// Never returns: execs the command, or throws before anything was changed on the host.
[[noreturn]] void launch(const ActionRequest& request);

}  // namespace capsa::runtime
