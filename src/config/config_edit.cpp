#include "config/config_edit.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <vector>

#include "config/directives.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"

namespace capsa::config {
namespace {

std::string trim(const std::string& text) {
  auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The comma items of `value`, trimmed, empty and repeated ones dropped (Apptainer's rule).
std::vector<std::string> items_of(const std::string& value) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(',', start);
    if (end == std::string::npos) end = value.size();
    std::string item = trim(value.substr(start, end - start));
    if (!item.empty() && std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
    start = end + 1;
  }
  return items;
}

// The directive a line sets, if it sets one ("" for comments, blank lines, others).
std::string directive_of(const std::string& line) {
  std::string t = trim(line);
  if (t.empty() || t[0] == '#') return "";
  auto equals = t.find('=');
  return equals == std::string::npos ? "" : trim(t.substr(0, equals));
}

// A commented-out example of the directive ("#bind path = /opt", "# mksquashfs mem = 1G"):
// where a new line of it reads best.
bool commented_example(const std::string& line, const std::string& directive) {
  std::string t = trim(line);
  if (t.empty() || t[0] != '#') return false;
  t = trim(t.substr(1));
  auto equals = t.find('=');
  return equals != std::string::npos && trim(t.substr(0, equals)) == directive;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string line_of(const std::string& directive, const std::string& value) { return directive + " = " + value; }

[[noreturn]] void refuse_value(const Directive& d, const std::string& directive, const std::string& value) {
  throw Error("\"" + line_of(directive, value) + "\": expected " + expected_values(d));
}

const Directive& known(const std::string& directive) {
  const Directive* d = find_directive(directive);
  if (d == nullptr) {
    std::string near = nearest_directive(directive);
    throw Error("\"" + directive + "\" is not a valid configuration directive" +
                (near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
  }
  return *d;
}

}  // namespace

std::string config_value(const ConfigFile& file, const std::string& directive) {
  known(directive);
  return join(file.values(directive), ",");
}

std::string edit_config(const std::string& text, EditOp op, const std::string& directive, const std::string& value,
                        const std::string& path) {
  const Directive& d = known(directive);
  const bool list = d.kind == ValueKind::list;
  std::vector<std::string> values = items_of(value);
  std::vector<std::string> lines = split_lines(text);

  // Where the directive's lines are, and where a new one goes: at its first line, else
  // after its commented example, else at the end.
  std::optional<std::size_t> first_line, example;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (directive_of(lines[i]) == directive && !first_line) first_line = i;
    if (commented_example(lines[i], directive)) example = i + 1;
  }
  std::size_t insert_at = first_line ? *first_line : example ? *example : lines.size();
  std::vector<std::string> new_lines;  // inserted at insert_at
  bool removed = false;

  switch (op) {
    case EditOp::set: {
      if (values.empty()) throw Error("you must specify a value for directive \"" + directive + "\"");
      for (const std::string& v : values)
        if (!valid_value(d, v)) refuse_value(d, directive, v);
      if (list) {
        // New values first, as Apptainer prepends them; ones already set stay where they are.
        std::vector<std::string> existing = parse_config(text, path, nullptr).values(directive);
        for (const std::string& v : values)
          if (std::find(existing.begin(), existing.end(), v) == existing.end())
            new_lines.push_back(line_of(directive, v));
      } else {
        if (values.size() > 1) throw Error("\"" + directive + "\" takes one value, not \"" + value + "\"");
        new_lines.push_back(line_of(directive, values.front()));
        std::erase_if(lines, [&](const std::string& l) { return directive_of(l) == directive; });
      }
      break;
    }
    case EditOp::unset: {
      if (values.empty()) throw Error("you must specify the value of \"" + directive + "\" to unset");
      for (auto it = lines.begin(); it != lines.end();) {
        if (directive_of(*it) != directive) {
          ++it;
          continue;
        }
        std::string current = trim(it->substr(it->find('=') + 1));
        std::vector<std::string> kept;
        for (const std::string& item : list ? items_of(current) : std::vector<std::string>{current}) {
          if (std::find(values.begin(), values.end(), item) != values.end())
            removed = true;
          else
            kept.push_back(item);
        }
        if (kept.empty()) {
          it = lines.erase(it);
        } else {
          *it = line_of(directive, join(kept, ", "));
          ++it;
        }
      }
      if (!removed) throw Error("value '" + value + "' not found for directive \"" + directive + "\"");
      break;
    }
    case EditOp::reset: {
      std::erase_if(lines, [&](const std::string& l) { return directive_of(l) == directive; });
      if (list) {
        for (const std::string& item : items_of(std::string(d.default_value)))
          new_lines.push_back(line_of(directive, item));
      } else if (!d.default_value.empty()) {
        new_lines.push_back(line_of(directive, std::string(d.default_value)));
      }
      break;
    }
  }
  insert_at = std::min(insert_at, lines.size());
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(insert_at), new_lines.begin(), new_lines.end());
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  parse_config(out, path, nullptr);  // what is written must read back
  return out;
}

void write_config(const std::string& path, const std::string& text) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) throw_errno(path);
  const std::string target = resolved;
  const std::string directory = target.substr(0, std::max<std::size_t>(target.rfind('/'), 1));
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) throw_errno(target);
  if (::access(target.c_str(), W_OK) != 0 || ::access(directory.c_str(), W_OK) != 0)
    throw Error("cannot change " + target +
                ": permission denied (the administrator's configuration is changed as root; give -c FILE to change "
                "a copy of your own)");
  AtomicFile file(target, st.st_mode & 07777);
  std::size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(file.fd(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("writing " + file.temp_path());
    written += static_cast<std::size_t>(n);
  }
  file.commit();
}

}  // namespace capsa::config
