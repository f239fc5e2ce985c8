#pragma once
#include <functional>
#include <string_view>
// Each file cmd_<name>.cpp registers one top-level command on the CLI11 app.
#include <CLI/CLI.hpp>

#include "cli/registry_flags.hpp"
#include "runtime/launch.hpp"

namespace capsa::cli {

void add_sif_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_version_command(CLI::App& app);
// `--version`: as Apptainer prints it under the names singularity and apptainer
// ("apptainer version 1.4.5"), capsa's own version under the name capsa.
std::string version_line(const std::string& program_name);
void add_cache_command(CLI::App& app);
// exec, run, shell, test and run-help; only `only` when it names one of them. With
// `args` (the lean runner's command line), the flags capsa refuses are registered only
// when `args` names them (refused_flags.hpp).
void add_action_commands(CLI::App& app, std::string_view only = {}, const std::vector<std::string>* args = nullptr);
// One action command with every action flag under `app`; `run` gets the request
// (default: launch it, or join it for instance://NAME). `instance start|run` use it.
using ActionRunner = std::function<void(runtime::ActionRequest)>;
CLI::App* add_action(CLI::App& app, const std::string& name, const std::string& description,
                     const std::vector<std::string>* args = nullptr, const ActionRunner& run = {});
// `instance start|run|list|stop|stats`.
void add_instance_command(CLI::App& app);
// `instance save`, added to add_instance_command's `instance` (capsa-full only).
void add_instance_save_command(CLI::App& app);
void add_pull_command(CLI::App& app);
void add_build_command(CLI::App& app);
// `buildcfg [KEY]`: the configured install folders (util/build_config.hpp).
void add_buildcfg_command(CLI::App& app);
void add_push_command(CLI::App& app);
void add_delete_command(CLI::App& app);
void add_search_command(CLI::App& app);
void add_registry_command(CLI::App& app);
// `remote add|remove|use|list|login|logout|status`: library endpoints (library/remotes.hpp).
void add_remote_command(CLI::App& app);
void add_keyserver_command(CLI::App& app);
// `keyserver add|remove`, which `remote add-keyserver|remove-keyserver` run too. `config`:
// the user's remote list ("" for the default); `args`: [NAME] URI.
void keyserver_add(const std::string& config, const std::vector<std::string>& args, unsigned order, bool order_given,
                   bool insecure);
void keyserver_remove(const std::string& config, const std::vector<std::string>& args);

// A login to a registry (docker://HOST, oras://HOST) or a keyserver, as `registry login` and
// `keyserver login` take it; `remote login` of such a URI runs them, as Apptainer's does.
struct ServiceLogin {
  std::string uri;
  std::string username;
  std::string password;  // -p/--password ("": not given)
  bool password_stdin = false;
  bool insecure = false;  // a registry over plain http:// (remote login --insecure)
  std::string authfile;   // registry logins: this file instead of docker-config.json
};
void registry_login(const ServiceLogin& login);
// `config`: the user's remote list ("" for the default).
void keyserver_login(const std::string& config, const ServiceLogin& login);
// `config global` (and the refused `config fakeroot`): capsa.conf, cmd_config.cpp.
void add_config_command(CLI::App& app);
// `capability add|drop|list|avail` on capability.json (capsa-full only).
void add_capability_command(CLI::App& app);
// `overlay create`: ext3 overlay images and SIF overlay partitions.
void add_overlay_command(CLI::App& app);
// `sign`, `verify` and `key`: SIF signatures and the OpenPGP keyring (signing/).
void add_sign_command(CLI::App& app);
void add_verify_command(CLI::App& app);
void add_key_command(CLI::App& app);
// `completion bash|zsh` and the hidden `man-pages DIR`: generated from `app` itself.
void add_completion_command(CLI::App& app);
void add_man_pages_command(CLI::App& app);

// The SIF to run for `exec docker://REF`, `exec library://REF` and the like: docker_image.cpp pulls it into
// the cache (capsa-full), or with --disable-cache into a new directory under `tmpdir`
// (runtime::temporary_parent) that the run removes; docker_image_forward.cpp hands the
// whole command to capsa-full (the lean runner, which has no registry code).
struct RemoteImage {
  std::string sif;
  std::string temporary_directory;  // set with --disable-cache: holds the SIF
};
RemoteImage image_for_remote_reference(const std::string& reference, const RegistryFlags& registry, bool quiet,
                                       bool disable_cache, const std::string& tmpdir);

// Current time in Unix seconds, or SOURCE_DATE_EPOCH when set (reproducible images).
std::int64_t now_for_images();

}  // namespace capsa::cli
