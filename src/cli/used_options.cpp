#include "cli/used_options.hpp"

#include <algorithm>

namespace capsa::cli {

bool names_used(std::string_view names, const std::vector<std::string>& args) {
  while (!names.empty()) {
    std::string_view name = names.substr(0, names.find(','));
    names.remove_prefix(std::min(names.size(), name.size() + 1));
    for (const std::string& arg : args) {
      if (arg == name || (arg.size() > name.size() && arg.starts_with(name) && arg[name.size()] == '=')) return true;
      const bool letter = name.size() == 2 && name[0] == '-' && name[1] != '-';
      if (letter && arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' && arg.find(name[1], 1) != std::string::npos)
        return true;
    }
  }
  return false;
}

UsedOptions::UsedOptions(CLI::App& command, const std::vector<std::string>* args) : command_(command), args_(args) {
  if (args_ != nullptr && std::any_of(args_->begin(), args_->end(), [](const std::string& arg) {
        return arg == "-h" || arg == "--help" || arg == "--help-all";
      }))
    args_ = nullptr;
}

}  // namespace capsa::cli
