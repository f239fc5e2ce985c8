// `capsa exec|run|shell|test [FLAGS] IMAGE [ARGS...]` and `capsa run-help IMAGE`, with
// Apptainer's flags and environment variables. Flags end at IMAGE: everything after it
// belongs to the command in the container.
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "archive/source.hpp"
#include "cli/commands.hpp"
#include "cli/encryption_flags.hpp"
#include "cli/env_flags.hpp"
#include "cli/execution_control.hpp"
#include "cli/global_flags.hpp"
#include "cli/refused_flags.hpp"
#include "cli/registry_flags.hpp"
#include "cli/site_config.hpp"
#include "cli/used_options.hpp"
#include "image/metadata.hpp"
#include "runtime/bind_spec.hpp"
#include "runtime/instance.hpp"
#include "runtime/launch.hpp"
#include "runtime/overlay_spec.hpp"
#include "runtime/shared_namespaces.hpp"
#include "runtime/site_policy.hpp"
#include "sif/image.hpp"
#include "util/error.hpp"
#include "util/go_duration.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct ActionFlags {
  encryption::KeyFlags encryption;  // --passphrase, --pem-path
  std::vector<std::string> binds;
  std::vector<std::string> mounts;
  std::vector<std::string> env;
  std::vector<std::string> env_files;
  std::vector<std::string> no_mount;
  std::string home;
  std::string pwd;
  std::string workdir;
  std::string shell;
  bool contain = false;
  bool containall = false;
  bool cleanenv = false;
  bool no_home = false;
  bool writable_tmpfs = false;
  bool writable = false;
  bool underlay = false;
  bool allow_setuid = false;
  std::string runscript_timeout;  // run only
  bool nv = false;
  bool nvccli = false;
  bool rocm = false;
  std::vector<std::string> devices;
  std::vector<std::string> cdi_dirs;
  bool userns = false;
  bool fakeroot = false;
  bool ignore_subuid = false;
  bool ignore_fakeroot_command = false;
  bool ignore_userns = false;
  bool debug = false;
  bool quiet = false;
  bool pid = false;
  bool no_pid = false;
  bool ipc = false;
  bool uts = false;
  bool net = false;
  std::string hostname;
  std::vector<std::string> networks;
  std::vector<std::string> network_args;
  std::vector<std::string> dns;
  bool no_init = false;
  bool no_umask = false;
  bool no_eval = false;
  bool compat = false;
  bool no_nv = false;
  bool no_rocm = false;
  RegistryFlags registry;  // for a docker:// IMAGE
  std::vector<std::string> scratch;
  std::vector<std::string> containlibs;
  std::string netns_path;
  bool keep_privs = false;
  bool no_privs = false;
  std::vector<std::string> add_caps;
  std::vector<std::string> drop_caps;
  std::vector<std::string> security;
  std::string app;
  bool unsquash = false;
  bool disable_cache = false;
  std::string tmpdir;
  std::vector<std::string> overlays;
  std::vector<std::string> fusemounts;
  bool sharens = false;
  // Cgroup limits, as typed; numbers are checked when the request is made.
  std::string apply_cgroups, cpus, cpu_shares, cpuset_cpus, cpuset_mems, memory, memory_reservation, memory_swap,
      pids_limit, blkio_weight;
  bool oom_kill_disable = false;
  std::vector<std::string> blkio_weight_device;
};

std::vector<std::string> list_flag(const std::vector<std::string>& values, std::initializer_list<const char*> keys);

// A whole number given to `flag` (or its APPTAINER_ variable `key`), if any.
std::optional<std::int64_t> integer_flag(const std::string& flag, const std::string& given, const char* key) {
  const std::string text = !given.empty() ? given : env_value(key).value_or("");
  if (text.empty()) return std::nullopt;
  std::int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw Error(flag + " " + text + ": expected a whole number");
  return value;
}

runtime::CgroupFlags cgroup_flags_from(const ActionFlags& f) {
  auto text = [](const std::string& given, const char* key) {
    return !given.empty() ? given : env_value(key).value_or("");
  };
  runtime::CgroupFlags c;
  c.apply_file = text(f.apply_cgroups, "APPLY_CGROUPS");
  c.cpus = text(f.cpus, "CPUS");
  c.cpu_shares = integer_flag("--cpu-shares", f.cpu_shares, "CPU_SHARES");
  c.cpuset_cpus = text(f.cpuset_cpus, "CPUSET_CPUS");
  c.cpuset_mems = text(f.cpuset_mems, "CPUSET_MEMS");
  c.memory = text(f.memory, "MEMORY");
  c.memory_reservation = text(f.memory_reservation, "MEMORY_RESERVATION");
  c.memory_swap = text(f.memory_swap, "MEMORY_SWAP");
  c.oom_kill_disable = f.oom_kill_disable || env_flag("OOM_KILL_DISABLE");
  c.pids_limit = integer_flag("--pids-limit", f.pids_limit, "PIDS_LIMIT");
  c.blkio_weight = integer_flag("--blkio-weight", f.blkio_weight, "BLKIO_WEIGHT");
  c.blkio_weight_device = list_flag(f.blkio_weight_device, {"BLKIO_WEIGHT_DEVICE"});
  return c;
}

// --security seccomp:PROFILE (apptainer's other kinds, uid:, gid:, selinux: and
// apparmor:, are refused in one line): the profile's path.
std::string seccomp_profile_from(const std::vector<std::string>& options) {
  std::string profile;
  for (const std::string& option : options) {
    auto colon = option.find(':');
    const std::string kind = option.substr(0, colon);
    if (kind == "seccomp" && colon != std::string::npos && colon + 1 < option.size()) {
      profile = option.substr(colon + 1);
    } else if (kind == "uid" || kind == "gid" || kind == "selinux" || kind == "apparmor") {
      throw Error("--security " + option + " is not supported (capsa applies seccomp profiles only)");
    } else {
      throw Error("--security " + option + ": expected seccomp:PROFILE.json");
    }
  }
  return profile;
}

// A repeatable flag whose values may be comma lists, else the first of `keys` set in the
// environment (APPTAINER_KEY or SINGULARITY_KEY), split the same way.
std::vector<std::string> list_flag(const std::vector<std::string>& values, std::initializer_list<const char*> keys) {
  std::vector<std::string> out;
  for (const std::string& value : values)
    for (std::string& item : split_list(value)) out.push_back(std::move(item));
  if (!values.empty()) return out;
  for (const char* key : keys)
    if (auto value = env_value(key)) return split_list(*value);
  return out;
}

// Apptainer 1.4's action flags that capsa does not carry out (yet), each with the reason
// a user reads; cmd/internal/cli/action_flags.go defines them.
// tests/cli/apptainer-1.4-commands.tsv lists every flag with its status.
const std::vector<RefusedFlag>& refused_action_flags() {
  static const std::vector<RefusedFlag> flags = {
      {"--dmtcp-launch", true, "capsa has no DMTCP checkpointing"},
      {"--dmtcp-restart", true, "capsa has no DMTCP checkpointing"},
      {"--docker-host", true, "capsa talks to registries, never to a Docker daemon"},
  };
  return flags;
}

runtime::ActionRequest request_from(const std::string& action, const ActionFlags& f,
                                    const std::vector<std::string>& rest) {
  reject_unknown_flag(action, rest);
  if (rest.empty()) throw Error(action + " needs an IMAGE (see `capsa help " + action + "`)");
  runtime::ActionRequest r;
  r.action = action;
  r.image = rest[0];
  r.args.assign(rest.begin() + 1, rest.end());
  if (action == "exec" && r.args.empty()) throw Error("exec needs a command to run in " + r.image);
  r.tmpdir = !f.tmpdir.empty() ? f.tmpdir : env_value("TMPDIR").value_or("");
  r.unsquash = f.unsquash || env_flag("UNSQUASH");
  // -B wins in order after the environment's binds, as Apptainer merges them.
  r.binds = runtime::binds_from_environment(std::map<std::string, std::string>{
      {"APPTAINER_BIND", env_value("BIND").value_or("")}, {"APPTAINER_BINDPATH", env_value("BINDPATH").value_or("")}});
  for (const auto& b : f.binds)
    for (auto& spec : runtime::parse_bind_list(b)) r.binds.push_back(spec);
  std::vector<std::string> mounts = f.mounts;
  if (auto from_environment = env_value("MOUNT")) mounts.insert(mounts.begin(), *from_environment);
  for (const auto& m : mounts)
    for (auto& spec : runtime::parse_mount(m)) r.binds.push_back(spec);
  r.contain = f.contain || f.containall || env_flag("CONTAIN") || env_flag("CONTAINALL");
  r.userns = f.userns || env_flag("USERNS") || env_flag("UNSHARE_USERNS");
  r.fakeroot = f.fakeroot || env_flag("FAKEROOT");
  r.fakeroot_options.ignore_subuid = f.ignore_subuid || env_flag("IGNORE_SUBUID");
  r.fakeroot_options.ignore_emulation = f.ignore_fakeroot_command || env_flag("IGNORE_FAKEROOT_COMMAND");
  // Apptainer's --ignore-userns: no user namespace. Root then runs as root (--userns and
  // --fakeroot change nothing for it); anyone else would need Apptainer's setuid starter.
  if (f.ignore_userns || env_flag("IGNORE_USERNS")) {
    if (::geteuid() != 0)
      throw Error(
          "--ignore-userns: an unprivileged container needs a user namespace (capsa has no setuid starter "
          "to run without one); leave the flag out, or run as root");
    r.userns = false;
    r.fakeroot = false;
  }
  r.cleanenv = f.cleanenv || f.containall || env_flag("CLEANENV") || env_flag("CONTAINALL");
  r.no_home = f.no_home || env_flag("NO_HOME");
  r.writable_tmpfs = f.writable_tmpfs || env_flag("WRITABLE_TMPFS");
  r.writable = f.writable || env_flag("WRITABLE");
  r.underlay = f.underlay || env_flag("UNDERLAY");
  r.allow_setuid = f.allow_setuid || env_flag("ALLOW_SETUID");
  if (r.allow_setuid && ::geteuid() != 0) throw Error("--allow-setuid requires root privileges");  // Apptainer's words
  // Only run has the flag, and with it the variable (Apptainer binds the two).
  if (action == "run") {
    const std::string timeout =
        !f.runscript_timeout.empty() ? f.runscript_timeout : env_value("RUNSCRIPT_TIMEOUT").value_or("");
    if (!timeout.empty()) r.runscript_timeout = parse_go_duration(timeout, "--runscript-timeout");
  }
  if (f.underlay) log::warning("Flag --underlay has been deprecated, default overlay is preferred");  // cobra's words
  r.no_mount = f.no_mount;
  if (r.no_mount.empty())
    if (auto list = env_value("NO_MOUNT")) r.no_mount = {*list};
  r.home = !f.home.empty() ? f.home : env_value("HOME").value_or("");
  r.pwd = !f.pwd.empty() ? f.pwd : env_value("PWD").value_or(env_value("CWD").value_or(""));
  r.workdir = !f.workdir.empty() ? f.workdir : env_value("WORKDIR").value_or("");
  r.shell = !f.shell.empty() ? f.shell : env_value("SHELL").value_or("");
  r.env_args = f.env;
  r.env_files = f.env_files;
  if (auto files = env_value("ENV_FILE")) r.env_files.insert(r.env_files.begin(), *files);
  // `always use nv|rocm` in the configuration: as if every run said --nv, --rocm
  // (--no-nv, --no-rocm still undo it, as in Apptainer); `use nvidia-container-cli`: --nv
  // means --nvccli.
  const config::SiteConfig& site = site_config();
  const bool no_nv = f.no_nv || env_flag("NV_OFF") || env_flag("NO_NV");
  r.nv = (f.nv || env_flag("NV") || site.always_use_nv) && !no_nv;
  r.nvccli = (f.nvccli || env_flag("NVCCLI") || (r.nv && site.use_nvidia_container_cli)) && !no_nv;
  r.rocm = (f.rocm || env_flag("ROCM") || site.always_use_rocm) &&
           !(f.no_rocm || env_flag("ROCM_OFF") || env_flag("NO_ROCM"));
  r.cdi_devices = list_flag(f.devices, {});
  r.cdi_dirs = list_flag(f.cdi_dirs, {});
  // --compat is --containall --no-init --no-umask --no-eval --writable-tmpfs (action_flags.go).
  const bool compat = f.compat || env_flag("COMPAT");
  if (compat) {
    r.contain = r.cleanenv = true;
    if (!r.writable) r.writable_tmpfs = true;
  }
  const bool containall = f.containall || env_flag("CONTAINALL") || compat;
  r.namespaces.pid =
      (f.pid || env_flag("PID") || env_flag("UNSHARE_PID") || containall) && !(f.no_pid || env_flag("NO_PID"));
  r.namespaces.ipc = f.ipc || env_flag("IPC") || env_flag("UNSHARE_IPC") || containall;
  r.namespaces.hostname = !f.hostname.empty() ? f.hostname : env_value("HOSTNAME").value_or("");
  r.namespaces.uts = f.uts || env_flag("UTS") || env_flag("UNSHARE_UTS") || !r.namespaces.hostname.empty();
  r.networks = list_flag(f.networks, {"NETWORK"});
  r.network_args = list_flag(f.network_args, {"NETWORK_ARGS"});  // a comma list, as Apptainer's string slice
  // --network implies --net; --net alone asks for Apptainer's default network, bridge.
  r.namespaces.net = f.net || env_flag("NET") || env_flag("UNSHARE_NET") || !r.networks.empty();
  if (r.namespaces.net && r.networks.empty()) r.networks = {"bridge"};
  r.dns = list_flag(f.dns, {"DNS"});
  r.namespaces.init = !(f.no_init || env_flag("NOSHIMINIT") || compat);
  r.no_umask = f.no_umask || env_flag("NO_UMASK") || compat;
  r.no_eval = f.no_eval || env_flag("NO_EVAL") || compat;
  r.scratch = list_flag(f.scratch, {"SCRATCH", "SCRATCHDIR"});
  r.capabilities.keep_privs = f.keep_privs || env_flag("KEEP_PRIVS");
  r.capabilities.no_privs = f.no_privs || env_flag("NO_PRIVS");
  r.capabilities.add = list_flag(f.add_caps, {"ADD_CAPS"});
  r.capabilities.drop = list_flag(f.drop_caps, {"DROP_CAPS"});
  r.seccomp_profile = seccomp_profile_from(list_flag(f.security, {"SECURITY"}));
  r.libraries = list_flag(f.containlibs, {"CONTAINLIBS"});
  r.app = !f.app.empty() ? f.app : env_value("APP").value_or(env_value("APPNAME").value_or(""));
  r.cgroups = cgroup_flags_from(f);
  r.fusemounts = f.fusemounts;
  r.sharens = f.sharens || env_flag("SHARENS");
  if (r.fusemounts.empty())
    if (auto value = env_value("FUSESPEC")) r.fusemounts = {*value};
  r.overlays = runtime::parse_overlays(list_flag(f.overlays, {"OVERLAY", "OVERLAYIMAGE"}));
  r.namespaces.netns_path = !f.netns_path.empty() ? f.netns_path : env_value("NETNS_PATH").value_or("");
  if (!r.namespaces.netns_path.empty() && r.namespaces.net) {
    // Apptainer's words and choice: the existing namespace wins.
    log::warning("cannot join existing --netns-path and create a new network namespace with --net/-n");
    r.namespaces.net = false;
    r.networks.clear();
  }
  runtime::apply_site_config(site, r);
  // Asked for (and a PEM file checked) before anything is pulled or mounted, as Apptainer
  // does; the lean runner hands a PEM key to capsa-full here, before it has made anything.
  set_run_key(f.encryption, r);
  // Last: a --disable-cache pull makes a directory that only launch() removes.
  if (r.image.starts_with("docker://") || r.image.starts_with("oras://") || r.image.starts_with("library://") ||
      archive::is_local_source(r.image) || r.image.starts_with("http://") || r.image.starts_with("https://")) {
    RemoteImage pulled = image_for_remote_reference(r.image, f.registry, f.quiet || quiet_output(),
                                                    f.disable_cache || env_flag("DISABLE_CACHE"), r.tmpdir);
    r.image = pulled.sif;
    r.temporary_directory = pulled.temporary_directory;
  }
  try {
    const std::optional<FileIdentity> site_checked = runtime::check_site_image(site, r.image);
    if (!r.image.starts_with("instance://")) r.image_checked = check_execution_control(r.image);
    r.image_content_checked = r.image_checked.has_value();
    // Both checks must have judged one file, and the launch runs that file or nothing.
    if (site_checked && r.image_checked && !(*site_checked == *r.image_checked))
      throw Error(r.image + " changed while it was being checked: nothing was run (run the command again)");
    if (site_checked) r.image_checked = site_checked;
  } catch (const Error&) {
    std::error_code ignored;
    if (!r.temporary_directory.empty()) std::filesystem::remove_all(r.temporary_directory, ignored);
    throw;
  }
  return r;
}

}  // namespace

CLI::App* add_action(CLI::App& app, const std::string& name, const std::string& description,
                     const std::vector<std::string>* args, const ActionRunner& run) {
  auto flags = std::make_shared<ActionFlags>();
  auto* cmd = app.add_subcommand(name, description);
  cmd->prefix_command();  // IMAGE and what follows are not capsa's flags
  // In the runner only the flags the command line names (used_options.hpp).
  UsedOptions opts(*cmd, args);
  opts.list("-B,--bind", flags->binds, "SRC[:DEST[:ro|rw]], comma lists allowed (also APPTAINER_BIND)");
  opts.list("--mount", flags->mounts,
            "[type=bind,]src=SRC,dst=DEST[,ro]: CSV, one mount a line (also APPTAINER_MOUNT)");
  opts.flag("-c,--contain", flags->contain, "Empty /tmp, /var/tmp and home; minimal /dev");
  opts.flag("-C,--containall", flags->containall, "--contain plus --cleanenv and private PID and IPC namespaces");
  opts.flag("-e,--cleanenv", flags->cleanenv, "Do not pass the host environment");
  opts.list("--env", flags->env, "NAME=VALUE to set inside (repeatable)");
  opts.list("--env-file", flags->env_files, "File of NAME=VALUE lines to set inside");
  opts.flag("--no-home", flags->no_home, "Do not mount the home directory");
  opts.list("--no-mount", flags->no_mount,
            "Leave out system mounts: proc, sys, dev, devpts, tmp, home, cwd, hostfs, bind-paths, or a "
            "destination such as /etc/hosts (comma lists; also APPTAINER_NO_MOUNT)");
  opts.option("-H,--home", flags->home, "Home directory: SRC[:DEST]");
  opts.option("--pwd,--cwd", flags->pwd, "Working directory inside the container");
  opts.option("-W,--workdir", flags->workdir, "Host directory backing /tmp and /var/tmp (and home with --contain)");
  opts.flag("--nv", flags->nv, "Bring in the host's NVIDIA driver, tools and devices (also APPTAINER_NV)");
  opts.flag("--nvccli", flags->nvccli, "Set up the NVIDIA driver with nvidia-container-cli (also APPTAINER_NVCCLI)");
  opts.flag("--rocm", flags->rocm, "Bring in the host's AMD ROCm driver, tools and devices (also APPTAINER_ROCM)");
  opts.list("--device", flags->devices,
            "CDI device VENDOR/CLASS=NAME (e.g. nvidia.com/gpu=all), repeatable or comma-separated");
  opts.list("--cdi-dirs", flags->cdi_dirs, "Directories of CDI specs, comma-separated (default /etc/cdi,/var/run/cdi)");
  opts.list("-o,--overlay", flags->overlays,
            "PATH[:ro]: a persistent layer over the image: a directory, an ext3 image (capsa overlay create), "
            "a squashfs image or a SIF's overlay partition; writable unless :ro (repeatable, comma lists; also "
            "APPTAINER_OVERLAY)");
  opts.flag("--writable-tmpfs", flags->writable_tmpfs, "Let the container write, to a 64 MiB tmpfs discarded at exit");
  opts.flag("-w,--writable", flags->writable,
            "Run a sandbox directory read-write, or write to a SIF's overlay partition (also APPTAINER_WRITABLE)");
  opts.flag("--allow-setuid", flags->allow_setuid,
            "Root only: the image and the container's mounts without nosuid, and setuid programs take effect "
            "(also APPTAINER_ALLOW_SETUID)");
  opts.flag("--underlay", flags->underlay,
            "Root of binds of the image's entries on a tmpfs instead of an overlay (deprecated in Apptainer; "
            "also APPTAINER_UNDERLAY)");
  opts.flag("-u,--userns", flags->userns, "Run in a user namespace also as root (anyone else always gets one)");
  opts.flag("-f,--fakeroot", flags->fakeroot,
            "Run as root inside: uid 0 of a user namespace, through your subuid/subgid ranges or capsa's root "
            "emulation (also APPTAINER_FAKEROOT)");
  opts.flag("--ignore-subuid", flags->ignore_subuid,
            "With --fakeroot: do not use /etc/subuid and /etc/subgid ranges, emulate root instead");
  opts.flag("--ignore-fakeroot-command", flags->ignore_fakeroot_command,
            "With --fakeroot: no root emulation where there are no ranges, only uid 0 mapped");
  opts.flag("--ignore-userns", flags->ignore_userns,
            "No user namespace: root runs as root (--userns and --fakeroot then change nothing); refused to "
            "anyone else (also APPTAINER_IGNORE_USERNS)");
  opts.flag("-d,--debug", flags->debug, "Print the mount plan");
  opts.flag("-q,--quiet", flags->quiet, "No progress output when a docker:// image is pulled first");
  opts.flag("-p,--pid", flags->pid, "Run in a new PID namespace (with a shim init as PID 1)");
  opts.flag("--no-pid", flags->no_pid, "Do not run in a new PID namespace (undoes --containall's)");
  opts.flag("--no-init", flags->no_init, "With --pid: no shim init, the command is PID 1");
  opts.flag("-i,--ipc", flags->ipc, "Run in a new IPC namespace");
  opts.flag("--uts", flags->uts, "Run in a new UTS namespace (host name of its own)");
  opts.option("--hostname", flags->hostname, "Set the container's host name (implies --uts)");
  opts.flag("-n,--net", flags->net, "Run in a new network namespace (the bridge network unless --network says)");
  opts.list("--network", flags->networks,
            "Networks, comma separated: none (a private loopback only), or CNI networks of the site's "
            "network/*.conflist (bridge, ptp, ...; root only)");
  opts.list("--network-args", flags->network_args,
            "Arguments for the CNI networks: [NETWORK:]KEY=VALUE[;...], e.g. portmap=8080:80/tcp, IP=10.22.0.5, "
            "ipRange=10.22.1.0/24");
  opts.list("--dns", flags->dns, "DNS servers, comma separated, for the container's resolv.conf");
  opts.flag("--no-umask", flags->no_umask, "Use umask 0022 inside instead of the caller's");
  opts.flag("--no-eval", flags->no_eval, "Take --env/APPTAINERENV_ values literally, without shell evaluation");
  opts.flag("--compat", flags->compat, "OCI/Docker-like: --containall --no-init --no-umask --no-eval --writable-tmpfs");
  opts.list("-S,--scratch", flags->scratch,
            "A fresh directory at this absolute path (comma lists): a tmpfs, or WORKDIR/scratch/PATH with -W");
  opts.list("--containlibs", flags->containlibs, "Host libraries to bind into /.singularity.d/libs (comma lists)");
  opts.flag("--keep-privs", flags->keep_privs, "Root keeps every capability (capsa's default for root)");
  opts.flag("--no-privs", flags->no_privs, "Root starts with no capability (--add-caps names the ones kept)");
  opts.list("--add-caps", flags->add_caps, "Capabilities root keeps with --no-privs, comma separated (root only)");
  opts.list("--drop-caps", flags->drop_caps, "Capabilities to drop, comma separated (e.g. CAP_NET_RAW)");
  opts.list("--security", flags->security, "seccomp:PROFILE.json: an OCI seccomp profile for the command");
  opts.option("--netns-path", flags->netns_path, "Join this network namespace (root only), e.g. /run/netns/NAME");
  opts.flag("--unsquash", flags->unsquash,
            "Run a SIF from a temporary sandbox unpacked from it (in --tmpdir), removed after the run");
  opts.flag("--disable-cache", flags->disable_cache,
            "Pull a docker:// image into a temporary directory (in --tmpdir), removed after the run; the "
            "cache is not used");
  opts.option("--tmpdir", flags->tmpdir,
              "Where --unsquash and --disable-cache put their temporary image (APPTAINER_TMPDIR, TMPDIR, /tmp)");
  opts.option("--app", flags->app, "Run this SCIF app of the image (its runscript, test, environment)");
  opts.flag("--no-nv", flags->no_nv, "Do not bring in the NVIDIA driver (undoes APPTAINER_NV)");
  opts.flag("--no-rocm", flags->no_rocm, "Do not bring in the ROCm driver (undoes APPTAINER_ROCM)");
  opts.flag("--sharens", flags->sharens,
            "Share namespaces and the image mount with the other --sharens containers of the same parent process");
  opts.list("--fusemount", flags->fusemounts,
            "\"host:|container:PROGRAM [ARGS...] MOUNTPOINT\": mount a FUSE file system served by PROGRAM (the "
            "host's or the image's) at MOUNTPOINT in the container (repeatable)");
  opts.option("--apply-cgroups", flags->apply_cgroups,
              "Apply cgroup limits from this TOML file (Apptainer's cgroups.toml format; root, or a delegated cgroup)");
  opts.option("--cpus", flags->cpus, "CPUs the container may use, as a fraction (e.g. 1.5): cgroup cpu.max");
  opts.option("--cpu-shares", flags->cpu_shares, "Relative CPU weight (2 to 262144; cgroup cpu.weight)");
  opts.option("--cpuset-cpus", flags->cpuset_cpus, "CPUs the container may run on, e.g. 0-2,4");
  opts.option("--cpuset-mems", flags->cpuset_mems, "Memory nodes the container may use, e.g. 0");
  opts.option("--memory", flags->memory, "Memory limit, e.g. 512M or 2G (cgroup memory.max)");
  opts.option("--memory-reservation", flags->memory_reservation, "Memory soft limit, e.g. 256M (memory.low)");
  opts.option("--memory-swap", flags->memory_swap, "Memory plus swap limit, e.g. 1G; -1: unlimited swap");
  opts.flag("--oom-kill-disable", flags->oom_kill_disable, "Disable the OOM killer (cgroup v1 only)");
  opts.option("--pids-limit", flags->pids_limit, "Most processes and threads the container may have (pids.max)");
  opts.option("--blkio-weight", flags->blkio_weight, "Relative block I/O weight, 10 to 1000");
  opts.list("--blkio-weight-device", flags->blkio_weight_device, "DEVICE:WEIGHT, e.g. /dev/sda:500 (repeatable)");
  add_registry_flags(*cmd, flags->registry);
  add_encryption_flags(*cmd, flags->encryption, false);
  if (args != nullptr)
    add_refused_flags_in(*cmd, refused_action_flags(), *args);
  else
    add_refused_flags(*cmd, refused_action_flags());
  if (name == "run")
    opts.option("--runscript-timeout", flags->runscript_timeout,
                "How long the environment scripts may take before the runscript starts, as 30s, 2m, 1h "
                "(default 1m; also APPTAINER_RUNSCRIPT_TIMEOUT)");
  if (name == "shell") opts.option("-s,--shell", flags->shell, "Shell to run (also APPTAINER_SHELL)");
  cmd->footer(
      "IMAGE is a SIF file, a sandbox directory, or docker://REF, oras://REF or library://REF (pulled into the cache\n"
      "first), or instance://NAME (a running instance of yours, joined).\n"
      "Everything after IMAGE is passed to the container.");
  cmd->callback([cmd, flags, name, run] {
    if (flags->debug) log::set_level(log::Level::debug);  // the engine's debug messages (util/log.hpp)
    runtime::ActionRequest request = request_from(name, *flags, cmd->remaining());
    if (run)
      run(std::move(request));
    else if (request.image.starts_with("instance://"))
      runtime::join_instance(request);
    else if (request.sharens)
      runtime::launch_shared(request);
    else
      runtime::launch(request);
  });
  return cmd;
}

void add_action_commands(CLI::App& app, std::string_view only, const std::vector<std::string>* args) {
  auto wanted = [only](std::string_view name) { return only.empty() || only == name; };
  if (wanted("exec"))
    add_action(app, "exec", "Run a command in a container: exec [FLAGS] IMAGE COMMAND [ARGS...]", args);
  if (wanted("run")) add_action(app, "run", "Run the image's runscript: run [FLAGS] IMAGE [ARGS...]", args);
  if (wanted("shell")) add_action(app, "shell", "Start an interactive shell in a container: shell [FLAGS] IMAGE", args);
  if (wanted("test")) add_action(app, "test", "Run the image's test script: test [FLAGS] IMAGE", args);
  if (!wanted("run-help")) return;

  auto image = std::make_shared<std::string>();
  auto options = std::make_shared<image::InspectOptions>();
  options->helpfile = true;
  auto* help = app.add_subcommand("run-help", "Show the image's help text (%help, or an app's %apphelp)");
  help->add_option("image", *image, "SIF image or sandbox directory")->required();
  help->add_option("--app", options->app, "Show the help of this SCIF app (%apphelp)");
  help->callback([image, options] {
    // `inspect --helpfile [--app NAME]`, as Apptainer's run-help is.
    image::Metadata metadata = image::read_metadata_at(*image, *options);
    const std::string& text = options->app.empty() ? metadata.helpfile : metadata.apps[options->app].helpfile;
    std::cout << (text.empty() ? "No help sections were defined for this image" : text) << "\n";
  });
}

}  // namespace capsa::cli
