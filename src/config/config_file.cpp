#include "config/config_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "config/directives.hpp"
#include "util/error.hpp"

namespace capsa::config {
namespace {

std::string_view trim(std::string_view text) {
  const char* blanks = " \t\r";
  auto first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(blanks);
  return text.substr(first, last - first + 1);
}

// Apptainer's directive names: letters, blanks, '_' and '-' (parserReg in parser.go).
bool directive_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ' ' || c == '\t' || c == '_' || c == '-';
  });
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

[[noreturn]] void refuse_value(const std::string& where, std::string_view name, const std::string& value,
                               const Directive& directive) {
  throw FormatError(where + "\"" + std::string(name) + " = " + value + "\": expected " + expected_values(directive));
}

}  // namespace

bool ConfigFile::has(std::string_view directive) const {
  return std::any_of(lines_.begin(), lines_.end(), [&](const ConfigLine& l) { return l.directive == directive; });
}

std::vector<std::string> ConfigFile::values(std::string_view directive) const {
  const Directive* known = find_directive(directive);
  const bool list = known != nullptr && known->kind == ValueKind::list;
  std::vector<std::string> out;
  for (const ConfigLine& line : lines_) {
    if (line.directive != directive) continue;
    if (!list) {
      out.push_back(line.value);
      continue;
    }
    std::string_view rest = line.value;
    while (true) {
      auto comma = rest.find(',');
      std::string_view item = trim(rest.substr(0, comma));
      if (!item.empty()) out.emplace_back(item);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
}

std::string nearest_directive(std::string_view name) {
  std::string best;
  std::size_t best_distance = 4;  // more than three edits away is no misspelling
  for (const Directive& d : all_directives()) {
    std::size_t distance = edit_distance(name, d.name);
    if (distance < best_distance) {
      best_distance = distance;
      best = d.name;
    }
  }
  return best;
}

ConfigFile parse_config(std::string_view text, const std::string& path, std::vector<std::string>* warnings) {
  std::vector<ConfigLine> lines;
  // The first line of each non-list directive: a later one with another value is ignored
  // (Apptainer's rule), which an administrator who appended a line does not expect.
  std::map<std::string, ConfigLine, std::less<>> first;
  int number = 0;
  while (!text.empty() || number == 0) {
    ++number;
    auto newline = text.find('\n');
    std::string_view raw = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') {
      if (text.empty()) break;
      continue;
    }
    const std::string where = path + ":" + std::to_string(number) + ": ";
    auto equals = line.find('=');
    std::string_view name = equals == std::string_view::npos ? line : trim(line.substr(0, equals));
    if (equals == std::string_view::npos || !directive_name(name))
      throw FormatError(where + "\"" + std::string(line) +
                        "\" is not a directive (write `directive = value`, or `#` before a comment)");
    std::string value(trim(line.substr(equals + 1)));
    const Directive* directive = find_directive(name);
    if (directive == nullptr) {
      if (warnings != nullptr) {
        std::string near = nearest_directive(name);
        warnings->push_back(where + "unknown directive \"" + std::string(name) + "\" ignored" +
                            (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
      }
    } else if (!value.empty() && !valid_value(*directive, value)) {
      refuse_value(where, name, value, *directive);
    } else if (!value.empty()) {  // an empty value is no setting, as in Apptainer
      if (directive->kind != ValueKind::list && warnings != nullptr) {
        auto earlier = first.find(name);
        if (earlier == first.end())
          first.emplace(std::string(name), ConfigLine{std::string(name), value, number});
        else if (earlier->second.value != value) {
          std::string warning = where;
          warning.append("\"").append(name).append(" = ").append(value).append("\" is ignored: the first line, ");
          warning.append(path).append(":").append(std::to_string(earlier->second.line)).append(" (\"");
          warning.append(name).append(" = ").append(earlier->second.value).append("\"), counts");
          warnings->push_back(std::move(warning));
        }
      }
      lines.push_back({std::string(name), std::move(value), number});
    }
    if (text.empty()) break;
  }
  return ConfigFile(path, std::move(lines));
}

ConfigFile read_config(const std::string& path, std::vector<std::string>* warnings) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SystemError("reading the configuration " + path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw SystemError("reading the configuration " + path, errno);
  return parse_config(text.str(), path, warnings);
}

}  // namespace capsa::config
