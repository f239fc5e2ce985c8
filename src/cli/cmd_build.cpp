// `capsa build [FLAGS] TARGET SOURCE`: flags and environment as `apptainer build`.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "build/build.hpp"
#include "build/definition.hpp"
#include "capsa/version.hpp"
#include "cli/commands.hpp"
#include "cli/encryption_flags.hpp"
#include "cli/env_flags.hpp"
#include "cli/global_flags.hpp"
#include "cli/refused_flags.hpp"
#include "cli/registry_options.hpp"
#include "cli/site_config.hpp"
#include "convert/mksquashfs_args.hpp"
#include "oci/platform.hpp"
#include "runtime/bind_spec.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct BuildFlags {
  bool encrypt = false;
  encryption::KeyFlags encryption;  // --passphrase, --pem-path
  std::vector<std::string> positionals;
  bool force = false;
  bool update = false;
  bool sandbox = false;
  bool fakeroot = false;
  bool userns = false;
  bool notest = false;
  std::vector<std::string> sections;
  std::vector<std::string> build_args;
  std::vector<std::string> build_arg_files;
  bool warn_unused_build_args = false;
  std::vector<std::string> binds;
  std::vector<std::string> mounts;
  bool no_cleanup = false;
  bool ignore_subuid = false;
  bool ignore_fakeroot_command = false;
  bool ignore_userns = false;
  bool nv = false;
  bool rocm = false;
  bool disable_cache = false;
  bool fix_perms = false;
  RegistryFlags registry;
  bool quiet = false;
  std::string tmpdir;
  std::string compression = "zstd";
  std::string mksquashfs_args;
  bool json = false;
  bool writable_tmpfs = false;
  bool nvccli = false;
  std::string arch;
  std::string arch_variant;
};

std::string read_text_file(const std::string& path) {
  return with_context("--build-arg-file " + path, [&] { return read_whole_file(path); });
}

build::BuildOptions options_from(const BuildFlags& f) {
  build::BuildOptions o;
  if (f.positionals.size() != 2) throw Error("build needs TARGET and SOURCE (see `capsa help build`)");
  o.target = f.positionals[0];
  o.source = f.positionals[1];
  o.sandbox = f.sandbox;
  o.force = f.force || env_flag("FORCE");
  o.update = f.update || env_flag("UPDATE");
  // --userns: root builds in a user namespace too, as anyone else does (root of the
  // namespace, mapped to root outside, without root's rights on the host).
  o.fakeroot = f.fakeroot || env_flag("FAKEROOT") || f.userns || env_flag("USERNS");
  o.notest = f.notest || env_flag("NOTEST");
  std::vector<std::string> sections = f.sections;
  if (sections.empty())
    if (auto env = env_value("SECTION")) sections.push_back(*env);
  for (const std::string& list : sections) {
    std::stringstream words(list);
    for (std::string word; std::getline(words, word, ',');)
      if (!word.empty()) o.sections.insert(word);
  }
  // Files first, then --build-arg: a flag on the command line wins.
  for (const std::string& file : f.build_arg_files)
    for (auto& [k, v] : build::parse_build_arg_file(read_text_file(file), file)) o.build_args[k] = v;
  for (const std::string& arg : f.build_args) {
    auto [k, v] = build::parse_build_arg(arg);
    o.build_args[k] = v;
  }
  o.warn_unused_build_args = f.warn_unused_build_args;
  for (const auto& b : f.binds)
    for (auto& spec : runtime::parse_bind_list(b)) o.binds.push_back(spec);
  // --mount takes the actions' Docker-style specs (APPTAINER_MOUNT first, as for them).
  std::vector<std::string> mounts = f.mounts;
  if (auto from_environment = env_value("MOUNT")) mounts.insert(mounts.begin(), *from_environment);
  for (const auto& m : mounts)
    for (auto& spec : runtime::parse_mount(m)) o.binds.push_back(spec);
  // %post and %test run in a container too: their binds are user binds (issue 45).
  if (!o.binds.empty() && !site_config().user_bind_control) {
    const std::string origin = site_config().origin.empty() ? "capsa.conf" : site_config().origin;
    throw Error(
        "-B/--bind, --mount and APPTAINER_MOUNT: not allowed by the administrator (`user bind control = no` in " +
        origin + ")");
  }
  o.no_cleanup = f.no_cleanup || env_flag("NO_CLEANUP");
  o.ignore_subuid = f.ignore_subuid || env_flag("IGNORE_SUBUID");
  o.ignore_fakeroot_command = f.ignore_fakeroot_command || env_flag("IGNORE_FAKEROOT_COMMAND");
  o.ignore_userns = f.ignore_userns || env_flag("IGNORE_USERNS");
  o.nv = f.nv || env_flag("NV");
  o.rocm = f.rocm || env_flag("ROCM");
  o.disable_cache = f.disable_cache || env_flag("DISABLE_CACHE");
  o.fix_perms = f.fix_perms || env_flag("FIXPERMS");
  o.registry = registry_access(f.registry);
  if (!f.arch.empty()) o.platform = oci::platform_from_arch(f.arch);
  if (!f.arch_variant.empty()) {
    if (!o.platform) o.platform = oci::host_platform();
    o.platform->variant = f.arch_variant;
  }
  o.tmpdir = f.tmpdir;
  o.pack.compression = f.compression;
  // Read before anything is fetched or run: a bad option stops the build at once.
  std::string mksquashfs_args =
      f.mksquashfs_args.empty() ? env_value("MKSQUASHFS_ARGS").value_or("") : f.mksquashfs_args;
  convert::apply_mksquashfs_args(mksquashfs_args, o.pack);
  o.repack = mksquashfs_args.find_first_not_of(" \t") != std::string::npos;
  o.json = f.json || env_flag("JSON");
  o.writable_tmpfs = f.writable_tmpfs || env_flag("WRITABLE_TMPFS");
  // As for the actions (runtime/site_policy.cpp): the administrator may forbid overlays.
  if (o.writable_tmpfs && site_config().enable_overlay == "no") {
    const std::string origin = site_config().origin.empty() ? "capsa.conf" : site_config().origin;
    throw Error("--writable-tmpfs: not allowed by the administrator (`enable overlay = no` in " + origin + ")");
  }
  o.nvccli = f.nvccli || env_flag("NVCCLI");
  o.time = now_for_images();
  o.capsa_version = build_info::version;
  // --passphrase and --pem-path imply --encrypt, as in Apptainer (cmd/internal/cli/build.go).
  if (f.encrypt || f.encryption.passphrase || !f.encryption.pem_path.empty()) {
    if (o.sandbox) throw Error("--encrypt makes an encrypted SIF: it cannot be used with --sandbox");
    o.encryption_key = build_key(f.encryption);
    if (!o.encryption_key)
      throw Error(
          "--encrypt needs a key: --passphrase, --pem-path PUBLIC_KEY.pem, or "
          "APPTAINER_ENCRYPTION_PASSPHRASE / APPTAINER_ENCRYPTION_PEM_PATH");
  } else if (encryption::environment_names_a_key()) {
    log::warning("Encryption related env vars found, but --encrypt was not specified. NOT encrypting container.");
  }
  return o;
}

// `apptainer build` flags (cmd/internal/cli/build.go) capsa does not carry out (yet).
const std::vector<RefusedFlag>& refused_build_flags() {
  static const std::vector<RefusedFlag> flags = {
      {"--library", true, "it names the Library whose remote builder --remote uses; capsa builds on this machine only"},
      {"--docker-host", true, "capsa talks to registries, never to a Docker daemon"},
      {"--remote", false, "capsa builds on this machine; there is no remote build service"},
  };
  return flags;
}

}  // namespace

void add_build_command(CLI::App& app) {
  auto flags = std::make_shared<BuildFlags>();
  auto* cmd = app.add_subcommand(
      "build",
      "Build a SIF image (or a sandbox directory) from a definition file, docker://REF, an image archive or "
      "layout, a SIF or a sandbox");
  cmd->add_option("args", flags->positionals, "TARGET SOURCE")->required()->expected(2);
  cmd->add_flag("-F,--force", flags->force, "Replace an existing TARGET (and base-image labels with %labels)");
  cmd->add_flag("-s,--sandbox", flags->sandbox, "Write TARGET as a writable directory instead of a SIF");
  cmd->add_flag("-u,--update", flags->update,
                "With --sandbox: run the definition over the existing sandbox TARGET instead of a fresh bootstrap");
  cmd->add_flag("-f,--fakeroot", flags->fakeroot,
                "Build as root-in-a-user-namespace (implied when not root): subuid/subgid ranges if you have "
                "them, else root emulation");
  cmd->add_flag("--userns", flags->userns,
                "Build in a user namespace also as root (anyone else always does; the same as --fakeroot here)");
  cmd->add_flag("-T,--notest", flags->notest, "Do not run %test at the end of the build");
  cmd->add_option("--section", flags->sections,
                  "Run only these sections (comma-separated: setup, files, post, environment, runscript, "
                  "startscript, test, labels, help; or all)");
  cmd->add_option("--build-arg", flags->build_args, "KEY=VALUE for {{ KEY }} in the definition file (repeatable)");
  cmd->add_option("--build-arg-file", flags->build_arg_files, "File of KEY=VALUE lines for {{ KEY }}");
  cmd->add_flag("--warn-unused-build-args", flags->warn_unused_build_args,
                "Warn instead of failing when a build argument is not used");
  cmd->add_option("-B,--bind", flags->binds, "SRC[:DEST[:ro]] bound during %post and %test (repeatable)");
  cmd->add_option("--mount", flags->mounts,
                  "[type=bind,]src=SRC,dst=DEST[,ro] bound during %post and %test, as the actions' --mount "
                  "(also APPTAINER_MOUNT)")
      ->allow_extra_args(false);
  cmd->add_flag("--no-cleanup", flags->no_cleanup,
                "Keep the temporary build directory, whether the build works or fails, and print where it is");
  cmd->add_flag("--ignore-subuid", flags->ignore_subuid,
                "Fakeroot builds: do not use /etc/subuid and /etc/subgid ranges, emulate root instead");
  cmd->add_flag("--ignore-fakeroot-command", flags->ignore_fakeroot_command,
                "Fakeroot builds without ranges: no root emulation, only uid 0 mapped (changing owners fails)");
  cmd->add_flag("--ignore-userns", flags->ignore_userns,
                "No user namespace: root builds as root even with --fakeroot; an unprivileged build cannot");
  cmd->add_flag("--nv", flags->nv, "Make the host's NVIDIA driver available to %post and %test");
  cmd->add_flag("--nvccli", flags->nvccli,
                "Set the NVIDIA driver up for %post and %test with nvidia-container-cli instead (implies --nv)");
  cmd->add_flag("--rocm", flags->rocm, "Make the host's AMD ROCm driver available to %post and %test");
  cmd->add_flag("--disable-cache", flags->disable_cache, "Do not use or fill the cache for docker:// sources");
  cmd->add_flag("--fix-perms", flags->fix_perms,
                "Give the owner read/write (and search) on everything a docker:// base image brings (u+rwX)");
  add_registry_flags(*cmd, flags->registry);
  cmd->add_option("--tmpdir", flags->tmpdir, "Where the build's temporary tree goes (APPTAINER_TMPDIR, TMPDIR)");
  cmd->add_option("--arch", flags->arch,
                  "Architecture of docker:// images to build from (amd64, arm64, ppc64le, ...); default: this "
                  "machine's");
  cmd->add_option("--arch-variant", flags->arch_variant, "Architecture variant with --arch (v7, v8, ...)");
  cmd->add_option("--compression", flags->compression, "Squashfs compression: zstd (default), gzip or xz");
  cmd->add_option("--mksquashfs-args", flags->mksquashfs_args,
                  "mksquashfs options for the SIF's squashfs, those capsa's packer can honour: -comp, -b, "
                  "-Xcompression-level, -processors, -all-root, -force-uid/-gid, -noappend, -no-xattrs, -mem");
  cmd->add_flag("--json", flags->json,
                "The definition file is in Apptainer's JSON form (header, imageData, buildData, customData)");
  cmd->add_flag("--writable-tmpfs", flags->writable_tmpfs,
                "%test may write: to a tmpfs over the image, thrown away after it (without: the image is read-only)");
  cmd->add_flag("-e,--encrypt", flags->encrypt,
                "Encrypt the image's file system (gocryptfs, as Apptainer's unprivileged builds; docs/encryption.md)");
  add_encryption_flags(*cmd, flags->encryption, true);
  cmd->add_flag("-q,--quiet", flags->quiet, "No progress output");
  add_refused_flags(*cmd, refused_build_flags());
  cmd->footer(
      "SOURCE: a definition file, docker://REF, docker-archive:FILE[:NAME:TAG] (`docker save`),\n"
      "oci-archive:FILE[:TAG] (a tar of an OCI layout), oci:DIR[:TAG] (an OCI layout), a SIF image or a\n"
      "sandbox directory. Definition files also take Bootstrap: docker-archive, oci-archive, oci and oras.\n"
      "Definition files: see docs/build.md. A failing %setup, %post or %test stops the build and writes\n"
      "nothing; the temporary build directory is removed, also on Ctrl-C (kept with --no-cleanup).");
  cmd->callback([flags] {
    bool quiet = flags->quiet || quiet_output();
    Progress progress(Progress::detect_mode(quiet, 2));
    install_interrupt_handlers();
    build::BuildResult result;
    try {
      result = build::build(options_from(*flags), progress);
    } catch (const Error& e) {
      if (interrupt_signal() == 0) throw;
      std::cerr << "capsa: build interrupted by " << signal_name(interrupt_signal())
                << "; nothing was written and the build directory was removed\n";
      std::exit(128 + interrupt_signal());
    }
    for (const std::string& w : result.warnings) log::warning(w);
    if (!quiet) std::cerr << "capsa: build complete: " << result.target << "\n";
  });
}

}  // namespace capsa::cli
