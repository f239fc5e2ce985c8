#include "cli/command_tree.hpp"

namespace capsa::cli {
namespace {

CommandInfo describe(CLI::App& app, std::vector<std::string> path) {
  CommandInfo info;
  info.path = std::move(path);
  info.description = app.get_description();
  info.footer = app.get_footer();
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional() || option->get_group().empty()) continue;  // positionals; hidden flags
    FlagInfo flag;
    for (const std::string& name : option->get_snames()) flag.names.push_back("-" + name);
    for (const std::string& name : option->get_lnames()) flag.names.push_back("--" + name);
    if (option->get_expected_max() != 0) flag.value = option->get_type_name();  // "TEXT"; "" for a switch
    flag.description = option->get_description();
    info.flags.push_back(std::move(flag));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App* candidate) { return !candidate->get_group().empty(); })) {
    std::vector<std::string> sub_path = info.path;
    sub_path.push_back(sub->get_name());
    info.subcommands.push_back(describe(*sub, std::move(sub_path)));
  }
  return info;
}

}  // namespace

CommandInfo describe_commands(CLI::App& app) { return describe(app, {}); }

}  // namespace capsa::cli
