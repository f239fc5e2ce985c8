// `capsa pull [OUTPUT.sif] docker://REF|oras://REF`: flags and environment as `apptainer pull`.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <memory>

#include "archive/source.hpp"
#include "build/build.hpp"
#include "capsa/version.hpp"
#include "cli/commands.hpp"
#include "cli/env_flags.hpp"
#include "cli/global_flags.hpp"
#include "cli/refused_flags.hpp"
#include "cli/registry_options.hpp"
#include "oci/platform.hpp"
#include "pull/net_pull.hpp"
#include "pull/pull.hpp"
#include "sif/image.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct PullFlags {
  std::vector<std::string> positionals;
  bool force = false;
  bool disable_cache = false;
  bool no_cleanup = false;
  RegistryFlags registry;
  bool quiet = false;
  std::string arch;
  std::string arch_variant;
  bool sandbox = false;
  std::string platform;
  std::string compression = "zstd";
  std::string name;
  std::string dir;
  std::string library;
  std::string tmpdir;
  bool allow_unsigned = false;
};

pull::PullOptions options_from(const PullFlags& f) {
  pull::PullOptions options;
  if (f.positionals.size() == 1) {
    options.reference = f.positionals[0];
  } else if (f.positionals.size() == 2) {
    options.output = f.positionals[0];
    options.reference = f.positionals[1];
  } else {
    throw Error("pull needs [OUTPUT.sif] SOURCE (see `capsa help pull`)");
  }
  if (!options.reference.starts_with("docker://") && !pull::is_oras_reference(options.reference) &&
      !options.reference.starts_with("library://") && !archive::is_local_source(options.reference) &&
      !pull::is_http_reference(options.reference))
    throw Error("cannot pull \"" + options.reference +
                "\": use a docker://, oras://, library://, docker-archive:, oci-archive:, oci:, http:// or "
                "https:// reference");
  if (!f.library.empty()) options.library = f.library;
  if (!f.tmpdir.empty()) {
    struct stat st {};
    if (::stat(f.tmpdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(f.tmpdir.c_str(), W_OK) != 0)
      throw Error("--tmpdir " + f.tmpdir + ": not a directory this user can write to");
    options.tmpdir = f.tmpdir;
  }
  if (!f.name.empty()) options.output = f.name;
  if (!f.dir.empty()) options.output_dir = f.dir;
  options.force = f.force || env_flag("FORCE");
  options.disable_cache = f.disable_cache || env_flag("DISABLE_CACHE");
  options.no_cleanup = f.no_cleanup || env_flag("NO_CLEANUP");
  options.registry = registry_access(f.registry);
  if (!f.platform.empty()) options.platform = oci::parse_platform(f.platform);
  else if (!f.arch.empty()) options.platform = oci::platform_from_arch(f.arch);
  const std::string variant = !f.arch_variant.empty() ? f.arch_variant : env_value("PULL_ARCH_VARIANT").value_or("");
  if (!variant.empty()) {
    if (!options.platform) options.platform = oci::host_platform();
    options.platform->variant = variant;
  }
  options.compressor = convert::compressor_named(f.compression);
  return options;
}

// Whether the pulled file holds a signature; a file that is no SIF (a library may serve
// anything for another architecture) has none to speak of, and gets no warning.
bool sif_is_signed(const std::string& path) {
  try {
    for (const sif::Descriptor& d : sif::Image::open(path).objects())
      if (d.data_type == sif::DataType::Signature) return true;
  } catch (const Error&) {
    return true;
  }
  return false;
}

// `apptainer pull` flags (cmd/internal/cli/pull.go) capsa does not carry out (yet).
const std::vector<RefusedFlag>& refused_pull_flags() {
  static const std::vector<RefusedFlag> flags = {
      {"--docker-host", true, "capsa talks to registries, never to a Docker daemon"},
  };
  return flags;
}

// --sandbox: what `capsa build --sandbox` does with a docker:// source, to the name pull
// would give the SIF (Apptainer keeps that name, .sif and all, for the directory).
void pull_sandbox(const pull::PullOptions& options, Progress& progress, bool quiet) {
  if (pull::is_http_reference(options.reference))
    throw Error(
        "--sandbox with an http(s):// image is not supported; pull the SIF, then `capsa build --sandbox DIR "
        "IMAGE.sif`");
  if (pull::is_oras_reference(options.reference))
    throw Error(
        "--sandbox with an oras:// image is not supported yet; pull the SIF, then `capsa build --sandbox DIR "
        "IMAGE.sif`");
  if (options.platform && !(*options.platform == oci::host_platform()))
    throw Error("--sandbox with another platform than this machine's is not supported; pull a SIF instead");
  build::BuildOptions build;
  build.target = pull::output_path(options);
  build.source = options.reference;
  build.sandbox = true;
  build.force = options.force;
  build.disable_cache = options.disable_cache;
  build.no_cleanup = options.no_cleanup;
  build.registry = options.registry;
  build.time = now_for_images();
  build.capsa_version = build_info::version;
  build::BuildResult result = build::build(build, progress);
  for (const std::string& warning : result.warnings) log::warning(warning);
  if (!quiet) std::cerr << "Wrote " << result.target << "\n";
}

}  // namespace

void add_pull_command(CLI::App& app) {
  auto flags = std::make_shared<PullFlags>();
  auto* cmd = app.add_subcommand("pull",
                                 "Pull a docker:// image (converted) or an oras:// SIF from an OCI registry, a "
                                 "library:// SIF from a library, a SIF from an http(s):// URL, or convert an image "
                                 "archive (docker-archive:, oci-archive:, oci:), into a SIF file");
  cmd->add_option("args", flags->positionals,
                  "[OUTPUT.sif] docker://REF|oras://REF|library://REF|docker-archive:FILE[:NAME:TAG]|"
                  "oci-archive:FILE[:TAG]|oci:DIR[:TAG]|https://URL")
      ->required()
      ->expected(1, 2);
  cmd->add_flag("-F,--force", flags->force, "Overwrite an existing output file");
  cmd->add_flag("--disable-cache", flags->disable_cache, "Do not use or fill the cache (APPTAINER_DISABLE_CACHE)");
  cmd->add_flag("--no-cleanup", flags->no_cleanup,
                "Keep the temporary directory of a --disable-cache or --sandbox pull and print where it is "
                "(APPTAINER_NO_CLEANUP)");
  add_registry_flags(*cmd, flags->registry);
  cmd->add_option("--arch", flags->arch, "Architecture to pull (amd64, arm64, ppc64le, ...); default: this machine's");
  cmd->add_option("--arch-variant", flags->arch_variant,
                  "Architecture variant to pull, e.g. v8 for arm64, v7 for arm (APPTAINER_PULL_ARCH_VARIANT)");
  cmd->add_flag("--sandbox", flags->sandbox, "Write a sandbox directory (named as the SIF would be) instead of a SIF");
  cmd->add_option("--platform", flags->platform, "Platform to pull, OS/ARCH[/VARIANT], e.g. linux/arm64/v8");
  cmd->add_flag("-q,--quiet", flags->quiet, "No progress output");
  cmd->add_option("--compression", flags->compression,
                  "Squashfs compression: zstd (default: fast to decompress, kernels >= 4.14), gzip (what "
                  "Apptainer uses; readable by very old kernels), xz (smallest, slowest)");
  cmd->add_option("--name", flags->name, "Output file name (instead of OUTPUT.sif)");
  cmd->add_option("--dir", flags->dir, "Directory to write the output file in");
  cmd->add_option("--library", flags->library,
                  "URL of the library for library:// references (APPTAINER_LIBRARY); default: the host the "
                  "reference names");
  cmd->add_option("--tmpdir", flags->tmpdir,
                  "Directory for temporary files (default $TMPDIR, else /var/tmp); with the cache on they go in the "
                  "cache, to be renamed into it");
  cmd->add_flag("-U,--allow-unsigned,--allow-unauthenticated", flags->allow_unsigned,
                "Do not warn when a library:// image is not signed (APPTAINER_ALLOW_UNSIGNED; pull never "
                "requires a signature: check one with `capsa verify`)");
  add_refused_flags(*cmd, refused_pull_flags());
  cmd->footer(
      "oras://REF: a SIF pushed with `push` (Apptainer's or capsa's), downloaded as it is.\n"
      "docker-archive:FILE[:NAME:TAG] (`docker save`, `skopeo copy ... docker-archive:`), oci-archive:FILE[:TAG] (a\n"
      "tar of an OCI layout) and oci:DIR[:TAG] (an OCI layout) are converted in place, through the cache; without\n"
      "OUTPUT the name is Apptainer's: the file's name and the tag, e.g. img.tar_latest.sif.\n"
      "http(s)://URL: a SIF on a web server, downloaded (through the cache unless --disable-cache) and checked to\n"
      "be a SIF; without OUTPUT it is named as the URL's last path component.\n"
      "library://[HOST/]ENTITY/COLLECTION/CONTAINER[:TAG] pulls from a Library API server (--library URL).\n"
      "Credentials: APPTAINER_DOCKER_USERNAME/_PASSWORD (or SINGULARITY_...), --docker-login,\n"
      "`capsa registry login`, or ~/.docker/config.json. For NVIDIA NGC use the username '$oauthtoken' and an API "
      "key.\n"
      "Cache: $CAPSA_CACHEDIR, $APPTAINER_CACHEDIR or $SINGULARITY_CACHEDIR; see `capsa help cache`.");
  cmd->callback([flags] {
    bool quiet = flags->quiet || quiet_output();
    Progress progress(Progress::detect_mode(quiet, 2));
    install_interrupt_handlers();
    pull::PullResult result;
    try {
      pull::PullOptions options = options_from(*flags);
      if (flags->sandbox || env_flag("SANDBOX")) {
        pull_sandbox(options, progress, quiet);
        return;
      }
      result = pull::pull(options, progress);
    } catch (const Error& e) {
      if (interrupt_signal() == 0) throw;
      // Everything is unwound by now (temporaries removed, locks released): exit as a
      // shell expects of a command stopped by a signal.
      std::cerr << "capsa: " << e.what() << "; nothing was written, run again to resume\n";
      std::exit(128 + interrupt_signal());
    }
    if (!quiet) std::cerr << (result.from_cache ? "Using cached image: " : "Wrote ") << result.output_path << "\n";
    // Apptainer warns about an unsigned library image unless -U says not to.
    if (flags->positionals.back().starts_with("library://") && !flags->allow_unsigned && !env_flag("ALLOW_UNSIGNED") &&
        !sif_is_signed(result.output_path))
      log::warning(result.output_path + " is not signed: nobody vouches for its contents (-U hides this warning)");
  });
}

}  // namespace capsa::cli
