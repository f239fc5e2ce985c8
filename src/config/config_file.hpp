#pragma once
// An apptainer.conf-style file as its lines say it: `directive = value` lines, `#`
// comments, blank lines. Apptainer's reading (pkg/util/apptainerconf/parser.go): a
// directive may be repeated; list directives (bind path, limit container paths...) add
// every comma item of every line; any other takes its first line's value; a line with an
// empty value counts as absent. capsa is stricter where Apptainer is silent: a line that
// is no directive is an error naming FILE:LINE, and an unknown directive is a warning.
#include <string>
#include <string_view>
#include <vector>

namespace capsa::config {

struct ConfigLine {
  std::string directive;  // "bind path"
  std::string value;      // as written, blanks trimmed
  int line = 0;           // 1-based
};

class ConfigFile {
 public:
  ConfigFile() = default;  // no file: every directive at its default
  ConfigFile(std::string path, std::vector<ConfigLine> lines) : path_(std::move(path)), lines_(std::move(lines)) {}

  const std::string& path() const { return path_; }
  const std::vector<ConfigLine>& lines() const { return lines_; }
  // Whether a file was read at all (a read file without `bind path` has none, as in
  // Apptainer, where no file at all has the default ones).
  bool read() const { return !path_.empty(); }
  bool has(std::string_view directive) const;
  // A list directive's items (comma items of every line, trimmed, empty ones dropped);
  // for any other, the values of its lines in order (the first one counts).
  std::vector<std::string> values(std::string_view directive) const;

 private:
  std::string path_;
  std::vector<ConfigLine> lines_;
};

// Parses `text` read from `path` (which names it in messages). Throws FormatError
// "PATH:LINE: ..." for a line that is no `directive = value` or a value the directive
// does not take; an unknown directive adds "PATH:LINE: unknown directive ..." to `warnings`.
ConfigFile parse_config(std::string_view text, const std::string& path, std::vector<std::string>* warnings);

// Reads and parses the file at `path`; a file that cannot be read is an Error naming it.
ConfigFile read_config(const std::string& path, std::vector<std::string>* warnings);

// The directive nearest to `name` when it is probably a misspelling of it, else "".
std::string nearest_directive(std::string_view name);

}  // namespace capsa::config
