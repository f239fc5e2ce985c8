// `capsa exec|run|shell|test [FLAGS] IMAGE [ARGS...]` and `capsa run-help IMAGE`, with
// Apptainer's flags and environment variables. Flags end at IMAGE: everything after it
// belongs to the command in the container.
#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/env_flags.hpp"
#include "image/metadata.hpp"
#include "runtime/bind_spec.hpp"
#include "runtime/launch.hpp"
#include "sif/image.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

struct ActionFlags {
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
  bool nv = false;
  bool nvccli = false;
  bool userns = false;
  bool debug = false;
  bool quiet = false;
};

runtime::ActionRequest request_from(const std::string& action, const ActionFlags& f,
                                    const std::vector<std::string>& rest) {
  if (rest.empty()) throw Error(action + " needs an IMAGE (see `capsa help " + action + "`)");
  runtime::ActionRequest r;
  r.action = action;
  r.image = rest[0];
  r.args.assign(rest.begin() + 1, rest.end());
  if (action == "exec" && r.args.empty()) throw Error("exec needs a command to run in " + r.image);
  if (r.image.rfind("docker://", 0) == 0) r.image = image_for_docker_reference(r.image, f.quiet);
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
  r.containall = f.containall || env_flag("CONTAINALL");
  r.userns = f.userns || env_flag("USERNS") || env_flag("UNSHARE_USERNS");
  r.cleanenv = f.cleanenv || f.containall || env_flag("CLEANENV") || env_flag("CONTAINALL");
  r.no_home = f.no_home || env_flag("NO_HOME");
  r.writable_tmpfs = f.writable_tmpfs || env_flag("WRITABLE_TMPFS");
  r.writable = f.writable || env_flag("WRITABLE");
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
  r.nv = f.nv || env_flag("NV");
  r.nvccli = f.nvccli || env_flag("NVCCLI");
  return r;
}

void add_action(CLI::App& app, const std::string& name, const std::string& description) {
  auto flags = std::make_shared<ActionFlags>();
  auto* cmd = app.add_subcommand(name, description);
  cmd->prefix_command();  // IMAGE and what follows are not capsa's flags
  cmd->add_option("-B,--bind", flags->binds, "SRC[:DEST[:ro|rw]], comma lists allowed (also APPTAINER_BIND)")
      ->allow_extra_args(false);
  cmd->add_option("--mount", flags->mounts, "[type=bind,]src=SRC,dst=DEST[,ro]: CSV, one mount a line (also APPTAINER_MOUNT)")->allow_extra_args(false);
  cmd->add_flag("-c,--contain", flags->contain, "Empty /tmp, /var/tmp and home; minimal /dev");
  cmd->add_flag("-C,--containall", flags->containall, "--contain plus --cleanenv and private PID and IPC namespaces");
  cmd->add_flag("-e,--cleanenv", flags->cleanenv, "Do not pass the host environment");
  cmd->add_option("--env", flags->env, "NAME=VALUE to set inside (repeatable)")->allow_extra_args(false);
  cmd->add_option("--env-file", flags->env_files, "File of NAME=VALUE lines to set inside")->allow_extra_args(false);
  cmd->add_flag("--no-home", flags->no_home, "Do not mount the home directory");
  cmd->add_option("--no-mount", flags->no_mount,
                  "Leave out system mounts: proc, sys, dev, devpts, tmp, home, cwd, hostfs, bind-paths, or a "
                  "destination such as /etc/hosts (comma lists; also APPTAINER_NO_MOUNT)")
      ->allow_extra_args(false);
  cmd->add_option("-H,--home", flags->home, "Home directory: SRC[:DEST]");
  cmd->add_option("--pwd,--cwd", flags->pwd, "Working directory inside the container");
  cmd->add_option("-W,--workdir", flags->workdir, "Host directory backing /tmp and /var/tmp (and home with --contain)");
  cmd->add_flag("--nv", flags->nv, "Bring in the host's NVIDIA driver, tools and devices (also APPTAINER_NV)");
  cmd->add_flag("--nvccli", flags->nvccli, "Set up the NVIDIA driver with nvidia-container-cli (also APPTAINER_NVCCLI)");
  cmd->add_flag("--writable-tmpfs", flags->writable_tmpfs, "Let the container write, to a 64 MiB tmpfs discarded at exit");
  cmd->add_flag("-w,--writable", flags->writable,
                "Run a sandbox directory read-write: writes land in it (also APPTAINER_WRITABLE)");
  cmd->add_flag("-u,--userns", flags->userns, "Run in a user namespace also as root (anyone else always gets one)");
  cmd->add_flag("-d,--debug", flags->debug, "Print the mount plan");
  cmd->add_flag("-q,--quiet", flags->quiet, "No progress output when a docker:// image is pulled first");
  if (name == "shell") cmd->add_option("-s,--shell", flags->shell, "Shell to run (also APPTAINER_SHELL)");
  cmd->footer("IMAGE is a SIF file, a sandbox directory, or docker://REF (pulled into the cache first).\n"
              "Everything after IMAGE is passed to the container.");
  cmd->callback([cmd, flags, name] {
    if (flags->debug) log::set_level(log::Level::debug);  // the engine's debug messages (util/log.hpp)
    runtime::launch(request_from(name, *flags, cmd->remaining()));
  });
}

}  // namespace

void add_action_commands(CLI::App& app, std::string_view only) {
  auto wanted = [only](std::string_view name) { return only.empty() || only == name; };
  if (wanted("exec")) add_action(app, "exec", "Run a command in a container: exec [FLAGS] IMAGE COMMAND [ARGS...]");
  if (wanted("run")) add_action(app, "run", "Run the image's runscript: run [FLAGS] IMAGE [ARGS...]");
  if (wanted("shell")) add_action(app, "shell", "Start an interactive shell in a container: shell [FLAGS] IMAGE");
  if (wanted("test")) add_action(app, "test", "Run the image's test script: test [FLAGS] IMAGE");
  if (!wanted("run-help")) return;

  auto image = std::make_shared<std::string>();
  auto* help = app.add_subcommand("run-help", "Show the image's help text (%help)");
  help->add_option("image", *image, "SIF image")->required();
  help->callback([image] {
    image::InspectOptions options;
    options.helpfile = true;
    image::Metadata metadata = image::read_metadata(sif::Image::open(*image), options);
    std::cout << (metadata.helpfile.empty() ? "No help sections were defined for this image" : metadata.helpfile) << "\n";
  });
}

}  // namespace capsa::cli
