#include "build/build.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "archive/source.hpp"
#include "build/bootstrap.hpp"
#include "build/definition.hpp"
#include "build/definition_json.hpp"
#include "build/encrypted_sif.hpp"
#include "build/host_ops.hpp"
#include "build/stage_apps.hpp"
#include "build/stage_files.hpp"
#include "build/stage_metadata.hpp"
#include "convert/convert.hpp"
#include "convert/pack.hpp"
#include "image/directory_files.hpp"
#include "image/metadata.hpp"
#include "oci/platform.hpp"
#include "pull/pull.hpp"
#include "runtime/gpu/nvccli.hpp"
#include "runtime/sandbox_run.hpp"
#include "sif/writer.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"
#include "util/path.hpp"

namespace capsa::build {
namespace {

using runtime::RootMode;

enum class SourceKind { Definition, Docker, Image, Sandbox };

// SIF (the magic in the first 2048 bytes, as Apptainer looks for it) or bare squashfs.
bool is_image_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[2048] = {};
  in.read(head, sizeof head);
  std::string text(head, static_cast<std::size_t>(in.gcount()));
  return text.find("SIF_MAGIC") != std::string::npos || text.rfind("hsqs", 0) == 0;
}

// docker://, and the local image archives and layouts, which convert as it does.
SourceKind classify(const std::string& source) {
  if (source.rfind("docker://", 0) == 0 || archive::is_local_source(source)) return SourceKind::Docker;
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0)
    throw Error("build source " + source +
                ": no such file or directory (expected a definition file, docker://REF, "
                "docker-archive:FILE, oci-archive:FILE, oci:DIR, a SIF or a sandbox directory)");
  if (S_ISDIR(st.st_mode)) return SourceKind::Sandbox;
  return is_image_file(source) ? SourceKind::Image : SourceKind::Definition;
}

std::string temp_parent(const BuildOptions& options) {
  if (!options.tmpdir.empty()) return options.tmpdir;
  for (const char* name : {"APPTAINER_TMPDIR", "SINGULARITY_TMPDIR", "TMPDIR"})
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  return "/tmp";
}

RootMode choose_root_mode(const BuildOptions& options) {
  // Root builds as root unless it asks for --fakeroot; anyone else builds with --fakeroot
  // semantics, as Apptainer 1.x does for an unprivileged build from a definition file.
  // --ignore-userns takes the user namespace away: root builds as root, and anyone else
  // cannot build (Apptainer falls back to its setuid starter, which capsa does not have).
  if (::geteuid() == 0 && (!options.fakeroot || options.ignore_userns)) return RootMode::real_root;
  if (options.ignore_userns)
    throw Error(
        "--ignore-userns: an unprivileged build needs a user namespace (capsa has no setuid starter to "
        "build without one); leave the flag out, or build as root");
  // CAPSA_FAKEROOT_MODE=subid|emulated picks one way instead of the automatic choice
  // (docs/build.md): to compare them, or to avoid a broken subuid setup; --ignore-subuid
  // skips the subordinate ids, as Apptainer's.
  return runtime::chosen_fakeroot_mode(options.ignore_subuid);
}

std::vector<std::string> post_environment() {
  std::vector<std::string> env = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
      "HOME=/root",
      "USER=root",
      "LANG=C",
      "APPTAINER_ROOTFS=/",
      "SINGULARITY_ROOTFS=/",
      "APPTAINER_ENVIRONMENT=/.singularity.d/env/91-environment.sh",
      "SINGULARITY_ENVIRONMENT=/.singularity.d/env/91-environment.sh",
      "APPTAINER_CONTAINER=/",
  };
  // Package managers inside need the site's proxy as much as the host does.
  for (const char* name : {"TERM", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"})
    if (const char* value = std::getenv(name)) env.push_back(std::string(name) + "=" + value);
  return env;
}

// "-c /bin/bash" in a %post or %setup header chooses the shell.
std::string script_shell(const Script& script, const std::string& where) {
  std::istringstream words(script.args);
  std::string word, shell = "/bin/sh";
  while (words >> word) {
    if (word == "-c") {
      if (!(words >> shell)) throw FormatError(where + ": -c needs a shell (expected e.g. \"-c /bin/bash\")");
    } else {
      throw FormatError(where + ": unknown argument \"" + word + "\" (expected nothing or \"-c SHELL\")");
    }
  }
  return shell;
}

// The script as run: its first line turns tracing on with a prompt that names the
// definition file and line ("+ recipe.def:12: apt-get ..."), and blank lines keep the
// body's line numbers those of the file (for the first block of a repeated section).
// Set in the script rather than the environment: bash ignores PS4 from the environment
// when it runs as root.
std::string script_text(const Script& script, const std::string& file) {
  std::string base = file.substr(file.find_last_of('/') + 1);
  std::string name;
  for (char c : base)
    if (c != '\'' && c != '\\' && c != '\n') name += c;
  // dash leaves LINENO empty in traces: then the prompt names the file only.
  std::string prelude = "PS4='+ " + name + "${LINENO:+:$LINENO}: '; set -x\n";
  std::size_t padding = script.line > 1 ? static_cast<std::size_t>(script.line - 1) : 0;
  return prelude + std::string(padding, '\n') + script.body;
}

struct Context {
  const BuildOptions& options;
  Progress& progress;
  RootMode mode;
  std::string file;  // definition file name
  std::vector<std::string> warnings;
};

void run_setup(Context& ctx, const Stage& stage, const std::string& rootfs, const std::string& work) {
  const std::string where = ctx.file + ":" + std::to_string(stage.setup.line) + ": %setup";
  std::string shell = script_shell(stage.setup, where);
  std::string script = work + "/setup.sh";
  {
    std::ofstream out(script, std::ios::binary | std::ios::trunc);
    out << script_text(stage.setup, ctx.file);
    if (!out) throw Error(where + ": cannot write " + script);
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (const char* name : {"APPTAINER_ROOTFS", "SINGULARITY_ROOTFS"}) env.push_back(std::string(name) + "=" + rootfs);
  for (const char* name : {"APPTAINER_ENVIRONMENT", "SINGULARITY_ENVIRONMENT"})
    env.push_back(std::string(name) + "=" + rootfs + "/.singularity.d/env/91-environment.sh");
  ctx.progress.note("capsa: running %setup on the host");
  int status = run_program_as_build_root(ctx.mode, {shell, "-e", script}, env);
  ::unlink(script.c_str());
  throw_if_interrupted();
  if (status != 0)
    throw BuildScriptError(where + " failed with exit status " + std::to_string(status) +
                               " at the command traced last above (\"+ FILE:LINE:\"); no image was written",
                           status);
}

// %post and %test: `argv` run in the container as the build's root, with the build's
// environment, --bind, --nv (--nvccli) and --rocm. %test sees the image as `capsa test`
// sees a sandbox: read-only, or with --writable-tmpfs under a tmpfs it may write to.
// Returns its exit status.
int run_in_build_container(const Context& ctx, const std::string& rootfs, std::vector<std::string> argv,
                           bool test = false) {
  runtime::SandboxCommand command;
  command.read_only_root = test;
  command.writable_tmpfs = test && ctx.options.writable_tmpfs;
  command.nvccli = ctx.options.nvccli;
  command.rootfs = rootfs;
  command.argv = std::move(argv);
  command.env = post_environment();
  command.binds = ctx.options.binds;
  command.mode = ctx.mode;
  command.no_root_emulation = ctx.options.ignore_fakeroot_command;
  command.nv = ctx.options.nv || ctx.options.nvccli;
  command.rocm = ctx.options.rocm;
  return runtime::run_in_sandbox(command);
}

// %post, and after it each SCIF app's %appinstall (stage_apps.hpp).
void run_post(Context& ctx, const Stage& stage, const std::string& rootfs) {
  const Script post = post_with_app_installs(stage);
  const std::string where = stage.post.present
                                ? ctx.file + ":" + std::to_string(post.line) + ": %post"
                                : ctx.file + ":" + std::to_string(stage.apps.front().line) + ": %appinstall";
  std::string shell = script_shell(post, where);
  put_file_in_root(ctx.mode, rootfs, "/.post.script", script_text(post, ctx.file), 0755);
  ctx.progress.note(std::string("capsa: running %post as ") + runtime::root_mode_name(ctx.mode) + " in the container");
  int status = run_in_build_container(ctx, rootfs, {shell, "-e", "/.post.script"});
  throw_if_interrupted();
  remove_file_in_root(ctx.mode, rootfs, "/.post.script");
  if (status != 0)
    throw BuildScriptError(where + " failed with exit status " + std::to_string(status) +
                               " at the command traced last above (\"+ FILE:LINE:\"); no image was written",
                           status);
}

void run_test(Context& ctx, const std::string& rootfs, const std::string& where) {
  ctx.progress.note("capsa: running %test");
  int status = run_in_build_container(ctx, rootfs, {"/bin/sh", "/.singularity.d/actions/test"}, true);
  throw_if_interrupted();
  if (status != 0)
    throw BuildScriptError(where + " failed with exit status " + std::to_string(status) +
                               "; no image was written (skip it with --notest)",
                           status);
}

// --arch, else this machine's: the SIF's partition and the build-arch labels say it.
std::string target_architecture(const BuildOptions& options) {
  return options.platform ? options.platform->architecture : oci::host_platform().architecture;
}

BootstrapOptions bootstrap_options(const Context& ctx, const std::string& work) {
  BootstrapOptions boot;
  boot.mode = ctx.mode;
  boot.work_dir = work;
  boot.disable_cache = ctx.options.disable_cache;
  boot.fix_perms = ctx.options.fix_perms;
  boot.registry = ctx.options.registry;
  boot.platform = ctx.options.platform;
  boot.progress = ctx.progress.mode();
  boot.file = ctx.file;
  return boot;
}

// Packs `rootfs` into a SIF at `target` (temporary name + rename).
void write_sif(Context& ctx, const std::string& rootfs, const std::string& target, const std::string& deffile) {
  image::InspectOptions all;
  all.all = true;
  // Its warnings (a base image's unparsable labels.json) are left to `inspect` to show.
  image::Metadata metadata = image::read_metadata(image::DirectoryFiles(rootfs), all);
  sif::ObjectInput def;
  def.type = sif::DataType::Deffile;
  def.data = deffile;
  sif::ObjectInput inspect;
  inspect.type = sif::DataType::GenericJson;
  inspect.name = "inspect-metadata.json";
  inspect.data = nlohmann::ordered_json::parse(image::format_inspect(metadata, all)).dump();
  sif::CreateOptions create;
  create.time = ctx.options.time;
  if (std::getenv("SOURCE_DATE_EPOCH") != nullptr) create.uuid = sif::Uuid{};

  convert::PackOptions pack = ctx.options.pack;
  ctx.progress.note("capsa: creating the SIF image " + target);
  if (ctx.options.encryption_key) {
    ctx.progress.note("capsa: encrypting it with gocryptfs");
    EncryptedSifRequest request{rootfs,         target, temp_parent(ctx.options),
                                {def, inspect}, create, target_architecture(ctx.options),
                                ctx.mode,       pack,   *ctx.options.encryption_key};
    write_encrypted_sif(request);
    throw_if_interrupted();
    ::chmod(target.c_str(), 0755);
    return;
  }
  sif::PartitionSlot slot(
      target, create, {def, inspect},
      sif::partition_input("", sif::FsType::Squashfs, sif::PartType::PrimSys, target_architecture(ctx.options)));
  // Owners as the container sees them: read inside the subid namespace, the caller's
  // recorded as root under emulation.
  std::uint64_t size = runtime::pack_sandbox(rootfs, slot.fd(), static_cast<std::uint64_t>(slot.offset()), ctx.mode, pack);
  throw_if_interrupted();
  slot.finish(static_cast<std::int64_t>(size));
  ::chmod(target.c_str(), 0755);  // a SIF runs itself through its #! line
}

void write_sandbox(Context& ctx, const std::string& rootfs, const std::string& target) {
  if (path_exists(target)) remove_tree(ctx.mode, target);
  if (::rename(rootfs.c_str(), target.c_str()) != 0) throw_errno("move the sandbox to " + target);
}

// The definition file's text form as read once (--json: made from the JSON form).
ParseResult parse_source_definition(Context& ctx, const std::string& text) {
  ParseOptions parse;
  parse.file_name = ctx.options.json ? ctx.file + " (its text form)" : ctx.file;
  parse.build_args = ctx.options.build_args;
  parse.warn_unused_build_args = ctx.options.warn_unused_build_args;
  ParseResult parsed = parse_definition(text, parse);
  for (const std::string& w : parsed.warnings) ctx.warnings.push_back(w);
  return parsed;
}

std::string build_from_definition(Context& ctx, const std::string& work, const ParseResult& parsed) {
  const Definition& def = parsed.definition;
  const auto& sections = ctx.options.sections;

  std::map<std::string, std::string> stage_roots;
  std::string rootfs;
  for (std::size_t i = 0; i < def.stages.size(); ++i) {
    const Stage& stage = def.stages[i];
    rootfs = work + "/stage-" + std::to_string(i);
    std::string label = stage.name().empty() ? std::to_string(i + 1) : stage.name();
    ctx.progress.note("capsa: stage " + label + ": bootstrap " + stage.bootstrap() +
                      (stage.has("from") ? " from " + stage.get("from") : std::string()));
    BootstrapResult base;
    if (ctx.options.update && !ctx.options.force && i + 1 == def.stages.size()) {
      // --update: a copy of the existing sandbox, which replaces it only once the build
      // has succeeded, as Apptainer packs the target into the bundle.
      ctx.progress.note("capsa: building into the existing sandbox " + ctx.options.target + " (--update)");
      copy_sandbox(ctx.mode, ctx.options.target, rootfs);
    } else {
      base = bootstrap(stage, rootfs, bootstrap_options(ctx, work));
    }
    throw_if_interrupted();
    prepare_base_layout(ctx.mode, rootfs);
    // Apptainer makes the apps right after the bootstrap, before %setup and %files.
    write_apps(ctx.mode, rootfs, stage, ctx.file);

    if (section_enabled(sections, "files"))
      for (const FilesBlock& block : stage.files)
        if (!block.from_stage.empty()) copy_files(ctx.mode, rootfs, block, stage_roots.at(block.from_stage), ctx.file);
    if (stage.setup.present && section_enabled(sections, "setup")) run_setup(ctx, stage, rootfs, work);
    if (section_enabled(sections, "files"))
      for (const FilesBlock& block : stage.files)
        if (block.from_stage.empty()) copy_files(ctx.mode, rootfs, block, "", ctx.file);
    if ((stage.post.present || !stage.apps.empty()) && section_enabled(sections, "post")) run_post(ctx, stage, rootfs);

    StageContext meta;
    meta.architecture = target_architecture(ctx.options);
    meta.time = ctx.options.time;
    meta.capsa_version = ctx.options.capsa_version;
    meta.base_reference = base.base_reference;
    meta.force = ctx.options.force;
    meta.sections = sections;
    write_stage_metadata(ctx.mode, rootfs, stage, meta);

    bool last = i + 1 == def.stages.size();
    if (last && stage.test.present && !ctx.options.notest && section_enabled(sections, "test"))
      run_test(ctx, rootfs, ctx.file + ":" + std::to_string(stage.test.line) + ": %test");
    if (!stage.name().empty()) stage_roots[stage.name()] = rootfs;
  }
  return rootfs;
}

}  // namespace

BuildResult build(const BuildOptions& options, Progress& progress) {
  if (options.target.empty() || options.source.empty()) throw Error("build needs TARGET and SOURCE");
  const SourceKind kind = classify(options.source);
  if (options.update) {
    // Apptainer's words (cmd/internal/cli/build.go).
    if (!options.sandbox) throw Error("only sandbox update is supported: --sandbox flag is missing");
    if (!path_exists(options.target)) throw Error("could not update sandbox " + options.target + ": doesn't exist");
    if (!is_directory(options.target))
      throw Error("only sandbox update is supported: " + options.target + " is not a directory");
    if (kind != SourceKind::Definition)
      throw Error("--update runs a definition file over the sandbox: " + options.source + " is not one");
  } else if (path_exists(options.target) && !options.force) {
    throw Error("build target " + options.target +
                " already exists (use --force to replace it, or --update "
                "with --sandbox to build into it)");
  }
  if (options.json && kind != SourceKind::Definition)
    throw Error("--json reads a definition file in JSON form: " + options.source + " is not a definition file");
  // Said before anything is fetched, not when %post starts (the same line as the actions').
  if (options.nvccli && kind == SourceKind::Definition) {
    const char* path = std::getenv("PATH");
    runtime::gpu::require_nvidia_container_cli(path ? path : "/usr/bin:/bin");
  }
  if (options.sandbox && options.target.ends_with(".sif"))
    log::warning("--sandbox writes a directory, although " + options.target + " ends in .sif");

  Context ctx{options, progress, choose_root_mode(options), options.source, {}};
  BuildResult result;
  result.target = options.target;

  // docker:// -> SIF is a pull: the same file, through the same cache (unless
  // --fix-perms has files to change, or --mksquashfs-args asks for another packing).
  if (kind == SourceKind::Docker && !options.sandbox && !options.fix_perms && !options.repack &&
      !options.encryption_key) {
    pull::PullOptions pull;
    pull.reference = options.source;
    pull.output = options.target;
    pull.force = options.force;
    pull.disable_cache = options.disable_cache;
    pull.registry = options.registry;
    pull.platform = options.platform;
    pull.no_cleanup = options.no_cleanup;
    pull.compressor = convert::compressor_named(options.pack.compression);
    pull::pull(pull, progress);
    return result;
  }
  // A sandbox packs as it is: nothing to copy.
  if (kind == SourceKind::Sandbox && !options.sandbox) {
    write_sif(ctx, options.source, options.target,
              "bootstrap: localimage\nfrom: " + options.source + "\n\n");
    return result;
  }

  // Everything else is made in a build directory, removed on every way out; a sandbox
  // target's one sits beside it so that the finished tree is renamed into place.
  BuildDirectory work(options.sandbox ? directory_of(options.target) : temp_parent(options),
                      options.sandbox ? ".capsa-build-" : "capsa-build-", ctx.mode, options.no_cleanup);
  std::string rootfs = work / "rootfs";
  std::string deffile;
  switch (kind) {
    case SourceKind::Definition: {
      // The SIF keeps a definition file: a JSON one's text form (as Apptainer keeps its FullRaw).
      deffile = read_whole_file(options.source);
      if (options.json) deffile = definition_text_from_json(deffile, options.source);
      const ParseResult parsed = parse_source_definition(ctx, deffile);
      rootfs = build_from_definition(ctx, work.path(), parsed);
      break;
    }
    case SourceKind::Docker: {
      runtime::unpack_sandbox(pull_base_image(options.source, bootstrap_options(ctx, work.path())), rootfs, ctx.mode);
      if (options.fix_perms) give_owner_access(ctx.mode, rootfs);
      break;
    }
    case SourceKind::Image:
      runtime::unpack_sandbox(options.source, rootfs, ctx.mode);
      deffile = "bootstrap: localimage\nfrom: " + options.source + "\n\n";
      break;
    case SourceKind::Sandbox:
      copy_sandbox(ctx.mode, options.source, rootfs);
      break;
  }
  throw_if_interrupted();
  if (options.sandbox) write_sandbox(ctx, rootfs, options.target);
  else write_sif(ctx, rootfs, options.target, deffile);
  result.warnings = std::move(ctx.warnings);
  return result;
}

}  // namespace capsa::build
