// `capsa config global --get|--set|--unset|--reset DIRECTIVE [VALUE]`: Apptainer's
// `apptainer config global` (cmd/internal/cli/config_global_linux.go) on capsa.conf, or on
// the file -c/--config names (config/config_edit.hpp). `config fakeroot` is refused.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/site_config.hpp"
#include "config/config_edit.hpp"
#include "config/load.hpp"
#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace capsa::cli {
namespace {

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

  auto* fakeroot = config->add_subcommand("fakeroot", "Not supported: edit /etc/subuid and /etc/subgid directly");
  fakeroot->allow_extras();
  fakeroot->callback([] {
    throw Error(
        "'config fakeroot' is not supported (capsa --fakeroot reads /etc/subuid and /etc/subgid as they are; add "
        "ranges with `usermod --add-subuids`)");
  });
}

}  // namespace capsa::cli
