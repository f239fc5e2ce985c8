#include "cli/refused_flags.hpp"

#include "cli/used_options.hpp"
#include "util/error.hpp"

namespace capsa::cli {
namespace {

// "-f,--fakeroot" -> "--fakeroot": the name a user reads in Apptainer's documentation.
std::string long_name(const std::string& names) {
  auto comma = names.rfind(',');
  return comma == std::string::npos ? names : names.substr(comma + 1);
}

}  // namespace

void add_refused_flags(CLI::App& command, const std::vector<RefusedFlag>& flags) {
  for (const RefusedFlag& flag : flags) {
    CLI::Option* option = flag.takes_value ? command.add_option(flag.names) : command.add_flag(flag.names);
    option->group("");  // hidden
    if (flag.takes_value) option->allow_extra_args(false);
    // Thrown the moment the flag is parsed, before CLI11 counts the positionals: the
    // refusal is what the user reads, not a complaint about the arguments after it.
    const std::string message = long_name(flag.names) + " is not supported (" + flag.why + ")";
    option->each([message](const std::string&) { throw Error(message); })->trigger_on_parse();
  }
}

void add_refused_flags_in(CLI::App& command, const std::vector<RefusedFlag>& flags,
                          const std::vector<std::string>& args) {
  std::vector<RefusedFlag> named;
  for (const RefusedFlag& flag : flags)
    if (names_used(flag.names, args)) named.push_back(flag);
  add_refused_flags(command, named);
}

void reject_unknown_flag(const std::string& command, const std::vector<std::string>& rest) {
  if (rest.empty() || rest.front().size() < 2 || rest.front()[0] != '-') return;
  std::string flag = rest.front();
  if (auto equals = flag.find('='); equals != std::string::npos) flag.resize(equals);
  throw Error("unknown flag " + flag + " for " + command + " (see `capsa help " + command + "`)");
}

}  // namespace capsa::cli
