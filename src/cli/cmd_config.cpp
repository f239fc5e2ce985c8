// `capsa config global --get|--set|--unset|--reset DIRECTIVE [VALUE]`: Apptainer's
// `apptainer config global` (cmd/internal/cli/config_global_linux.go) on capsa.conf, or on
// the file -c/--config names (config/config_edit.hpp); `capsa config fakeroot
// --add|--remove|--enable|--disable USER` on /etc/subuid and /etc/subgid
// (config/subid_file.hpp).
#include <pwd.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/site_config.hpp"
#include "config/config_edit.hpp"
#include "config/load.hpp"
#include "config/subid_file.hpp"
#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace capsa::cli {
namespace {

struct FakerootFlags {
  bool add = false, remove = false, enable = false, disable = false;
  std::string user;
};

// The files `config fakeroot` edits: CAPSA_SUBUID_FILE and CAPSA_SUBGID_FILE name others,
// for staging a change (and the tests); the mappings newuidmap applies are /etc's.
std::string subid_path(const char* variable, const char* standard) {
  const char* chosen = std::getenv(variable);
  return chosen && *chosen ? chosen : standard;
}

config::SubidUser subid_user(const std::string& name_or_uid) {
  const struct passwd* pw = ::getpwnam(name_or_uid.c_str());
  uid_t uid = 0;
  const char* end = name_or_uid.data() + name_or_uid.size();
  // A number too large for a uid is no user, not an internal error.
  if (pw == nullptr && !name_or_uid.empty() &&
      std::from_chars(name_or_uid.data(), end, uid) == std::from_chars_result{end, std::errc{}})
    pw = ::getpwuid(uid);
  if (pw == nullptr) throw Error("config fakeroot: no user " + name_or_uid + " on this system");
  return {pw->pw_name, pw->pw_uid};
}

void run_fakeroot(const FakerootFlags& f) {
  const int actions = int{f.add} + int{f.remove} + int{f.enable} + int{f.disable};
  if (actions != 1)
    throw Error(
        "config fakeroot: give one of --add, --remove, --enable or --disable (see `capsa help config fakeroot`)");
  if (::geteuid() != 0) throw Error("config fakeroot: only root can change /etc/subuid and /etc/subgid");
  const config::SubidUser user = subid_user(f.user);
  // Both files are read and changed before either is written: a refusal changes neither.
  std::vector<config::SubidFile> files = {config::SubidFile::load(subid_path("CAPSA_SUBUID_FILE", "/etc/subuid")),
                                          config::SubidFile::load(subid_path("CAPSA_SUBGID_FILE", "/etc/subgid"))};
  std::vector<bool> changed;
  for (config::SubidFile& file : files) {
    if (f.add) changed.push_back(file.add_user(user));
    if (f.remove) changed.push_back(file.remove_user(user));
    if (f.enable) changed.push_back(file.enable_user(user));
    if (f.disable) changed.push_back(file.disable_user(user));
  }
  for (std::size_t i = 0; i < files.size(); ++i)
    if (changed[i]) files[i].save();
}

struct GlobalConfigFlags {
  bool set = false, unset = false, get = false, reset = false, dry_run = false;
  std::string directive, value;
};

// The file to change: -c/--config (or the environment's), else the administrator's.
std::string file_to_edit() {
  std::string path = chosen_config_file();
  if (path.empty()) path = config::system_config_path();
  if (path.empty())
    throw Error("no capsa.conf to change (looked for " + config_candidates("capsa.conf").front() +
                "); reinstall capsa, or give -c FILE");
  return path;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_errno("reading the configuration " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void run_global(const GlobalConfigFlags& f) {
  const int chosen = int{f.set} + int{f.unset} + int{f.get} + int{f.reset};
  if (chosen != 1)
    throw Error("config global: give one of --set, --unset, --get or --reset (see `capsa help config global`)");
  const std::string path = file_to_edit();
  const std::string text = read_text(path);
  if (f.get) {
    std::string value = config::config_value(config::parse_config(text, path, nullptr), f.directive);
    if (!value.empty()) std::cout << value << "\n";
    return;
  }
  const config::EditOp op = f.set ? config::EditOp::set : f.unset ? config::EditOp::unset : config::EditOp::reset;
  const std::string edited = config::edit_config(text, op, f.directive, f.value, path);
  if (f.dry_run) {
    std::cout << edited;
    return;
  }
  config::write_config(path, edited);
}

}  // namespace

void add_config_command(CLI::App& app) {
  auto* config = app.add_subcommand("config", "Manage the configuration file (capsa.conf, apptainer.conf syntax)");
  config->require_subcommand(1);

  auto flags = std::make_shared<GlobalConfigFlags>();
  auto* global = config->add_subcommand(
      "global", "Get or change a directive of capsa.conf: global (--set|--unset|--get|--reset) DIRECTIVE [VALUE]");
  global->add_flag("-s,--set", flags->set,
                   "Set the directive's value (a list directive, such as bind path, gets it added)");
  global->add_flag("-u,--unset", flags->unset,
                   "Remove the value from the directive (a list directive keeps its others)");
  global->add_flag("-g,--get", flags->get, "Print the directive's values, comma-separated (nothing when unset)");
  global->add_flag("-r,--reset", flags->reset, "Return the directive to its default value");
  global->add_flag("-d,--dry-run", flags->dry_run, "Print the changed file instead of writing it");
  global->add_option("directive", flags->directive, "The directive, quoted: \"bind path\", \"mount home\"...")
      ->required();
  global->add_option("value", flags->value, "The value(s), comma-separated");
  global->footer(
      "The file is PREFIX/etc/capsa/capsa.conf, or the one -c/--config names (`capsa -c FILE config global ...`).\n"
      "It is replaced atomically; only lines of the directive change, comments stay.\n"
      "Example: capsa config global --set \"bind path\" /scratch\n"
      "Directives and their meaning: docs/administration.md");
  global->callback([flags] { run_global(*flags); });

  auto fakeroot_flags = std::make_shared<FakerootFlags>();
  auto* fakeroot = config->add_subcommand(
      "fakeroot", "Manage fakeroot user mapping entries in /etc/subuid and /etc/subgid (root only)");
  fakeroot->add_flag("-a,--add", fakeroot_flags->add, "Add a mapping entry (65536 ids) for the user");
  fakeroot->add_flag("-r,--remove", fakeroot_flags->remove, "Remove the user's mapping entry");
  fakeroot->add_flag("-e,--enable", fakeroot_flags->enable, "Enable the user's (disabled) mapping entry");
  fakeroot->add_flag("-d,--disable", fakeroot_flags->disable, "Disable the user's mapping entry, keeping its range");
  fakeroot->add_option("user", fakeroot_flags->user, "The user (name or uid)")->required();
  fakeroot->footer(
      "A new entry is UID:START:65536, START the highest free range below 2^32 (as Apptainer allocates); a disabled\n"
      "entry keeps its line behind a '!'. --fakeroot uses the ranges through newuidmap/newgidmap.\n"
      "Example: capsa config fakeroot --add alice");
  fakeroot->callback([fakeroot_flags] { run_fakeroot(*fakeroot_flags); });
}

}  // namespace capsa::cli
