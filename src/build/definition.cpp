#include "build/definition.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "util/error.hpp"

namespace capsa::build {
namespace {

struct Line {
  int number;
  std::string text;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string trim(const std::string& text) {
  const char* space = " \t\r\n\f\v";
  auto first = text.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

bool blank_or_comment(const std::string& text) {
  std::string t = trim(text);
  return t.empty() || t[0] == '#';
}

[[noreturn]] void fail(const std::string& file, int line, const std::string& problem) {
  throw FormatError(file + ":" + std::to_string(line) + ": " + problem);
}

std::vector<Line> split_lines(const std::string& text) {
  std::vector<Line> lines;
  std::size_t start = 0;
  int number = 1;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    // Files edited on Windows end lines in CR LF. Every trailing CR goes, not just one:
    // the stage text saved in the image must parse to the same stage again.
    while (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back({number++, std::move(line)});
    start = end + 1;
  }
  return lines;
}

// "%name args" at the start of a line: a section header.
std::optional<std::pair<std::string, std::string>> section_line(const std::string& text) {
  if (text.size() < 2 || text[0] != '%' || std::isalpha(static_cast<unsigned char>(text[1])) == 0) return std::nullopt;
  std::size_t end = 1;
  while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '_')) ++end;
  if (end < text.size() && std::isspace(static_cast<unsigned char>(text[end])) == 0) return std::nullopt;
  return std::make_pair(lower(text.substr(1, end - 1)), trim(text.substr(end)));
}

bool starts_stage(const std::string& text) {
  static const std::regex bootstrap(R"(^\s*bootstrap\s*:)", std::regex::icase);
  return std::regex_search(text, bootstrap);
}

const std::set<std::string>& scif_sections() {
  static const std::set<std::string> names = {"appinstall", "applabels", "appfiles", "appenv",
                                              "apptest",    "apphelp",   "apprun",   "appstart"};
  return names;
}

constexpr const char* kValidSections =
    "%arguments, %setup, %files, %post, %environment, %runscript, %startscript, %test, %labels, %help, "
    "or a SCIF app's %appinstall, %apprun, %appenv, %apptest, %apphelp, %applabels, %appfiles, %appstart";

// Words of a %files line: whitespace-separated, with '...' and "..." for names with spaces.
std::vector<std::string> shell_words(const std::string& text, const std::string& file, int line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size()) word += text[++i];
      else word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) fail(file, line, "unterminated quote (expected a closing " + std::string(1, quote) + ")");
  if (in_word) words.push_back(word);
  return words;
}

std::string unquote(const std::string& value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    return value.substr(1, value.size() - 2);
  return value;
}

// Defaults of every %arguments section of a stage (before templating: they define it).
std::map<std::string, std::string> stage_arguments(const std::vector<Line>& lines, const std::string& file) {
  std::map<std::string, std::string> arguments;
  bool inside = false;
  for (const Line& line : lines) {
    if (auto section = section_line(line.text)) {
      inside = section->first == "arguments";
      continue;
    }
    if (!inside || blank_or_comment(line.text)) continue;
    std::string text = trim(line.text);
    auto eq = text.find('=');
    if (eq == std::string::npos || trim(text.substr(0, eq)).empty())
      fail(file, line.number, "bad %arguments line \"" + text + "\" (expected KEY=DEFAULT)");
    arguments[trim(text.substr(0, eq))] = unquote(trim(text.substr(eq + 1)));
  }
  return arguments;
}

// Replaces every {{ KEY }} outside %arguments; an unresolved one is an error.
void apply_templates(std::vector<Line>& lines, const std::map<std::string, std::string>& defaults,
                     const std::map<std::string, std::string>& build_args, std::set<std::string>& used,
                     const std::string& file) {
  static const std::regex placeholder(R"(\{\{\s*([^{}\s]*)\s*\}\})");
  bool in_arguments = false;
  for (Line& line : lines) {
    if (auto section = section_line(line.text)) in_arguments = section->first == "arguments";
    if (in_arguments) continue;
    std::string out;
    auto begin = std::sregex_iterator(line.text.begin(), line.text.end(), placeholder);
    std::size_t last = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      std::string key = m[1].str();
      if (key.empty()) fail(file, line.number, "empty template {{ }} (expected {{ KEY }})");
      std::string value;
      if (auto arg = build_args.find(key); arg != build_args.end()) value = arg->second;
      else if (auto def = defaults.find(key); def != defaults.end()) value = def->second;
      else
        fail(file, line.number,
             "build argument \"" + key + "\" has no value (expected --build-arg " + key +
                 "=VALUE, a --build-arg-file, or a default in %arguments)");
      used.insert(key);
      out += line.text.substr(last, static_cast<std::size_t>(m.position(0)) - last) + value;
      last = static_cast<std::size_t>(m.position(0) + m.length(0));
    }
    if (last != 0) line.text = out + line.text.substr(last);
  }
}

void append_script(Script& script, const std::string& args, const std::vector<Line>& body, int line) {
  if (!script.present) {
    script.present = true;
    script.args = args;
    script.line = line;
  } else if (script.args.empty()) {
    script.args = args;
  }
  for (const Line& l : body) script.body += l.text + "\n";
}

Script* script_for(Stage& stage, const std::string& name) {
  if (name == "pre") return &stage.pre;
  if (name == "setup") return &stage.setup;
  if (name == "post") return &stage.post;
  if (name == "environment") return &stage.environment;
  if (name == "runscript") return &stage.runscript;
  if (name == "startscript") return &stage.startscript;
  if (name == "test") return &stage.test;
  if (name == "help") return &stage.help;
  return nullptr;
}

void parse_header(Stage& stage, const std::vector<Line>& lines, std::size_t end, const std::string& file) {
  for (std::size_t i = 0; i < end; ++i) {
    const Line& line = lines[i];
    if (blank_or_comment(line.text)) continue;
    std::string text = trim(line.text);
    auto colon = text.find(':');
    if (colon == std::string::npos)
      fail(file, line.number, "\"" + text + "\" is not a header line (expected \"Key: value\" or a %section)");
    std::string key = lower(trim(text.substr(0, colon)));
    std::string value = trim(text.substr(colon + 1));
    if (stage.header.empty() && key != "bootstrap")
      fail(file, line.number, "the header must start with Bootstrap (expected \"Bootstrap: AGENT\", found \"" +
                                  trim(text.substr(0, colon)) + ":\")");
    if (!is_valid_header_key(key))
      fail(file, line.number, "unknown header keyword \"" + trim(text.substr(0, colon)) +
                                  "\" (expected one of Bootstrap, From, Stage, Registry, Namespace, Include, "
                                  "OSVersion, MirrorURL, Fingerprints, ...; see docs/build.md)");
    if (key == "bootstrap" && value.empty()) fail(file, line.number, "empty Bootstrap (expected an agent, e.g. docker)");
    auto existing = std::find_if(stage.header.begin(), stage.header.end(),
                                 [&](const auto& entry) { return entry.first == key; });
    if (existing != stage.header.end()) existing->second = value;
    else stage.header.emplace_back(key, value);
  }
  if (stage.header.empty()) {
    int line = lines.empty() ? 1 : lines.front().number;
    fail(file, line, "no header (expected \"Bootstrap: AGENT\" before the first section)");
  }
}

void parse_files_block(Stage& stage, const std::string& args, const std::vector<Line>& body, int line,
                       const std::string& file) {
  FilesBlock block;
  block.line = line;
  if (!args.empty()) {
    std::vector<std::string> words = shell_words(args, file, line);
    if (words.size() != 2 || lower(words[0]) != "from")
      fail(file, line, "bad %files arguments \"" + args + "\" (expected nothing or \"from STAGE\")");
    block.from_stage = words[1];
  }
  for (const Line& l : body) {
    if (blank_or_comment(l.text)) continue;
    std::vector<std::string> words = shell_words(l.text, file, l.number);
    if (words.size() > 2)
      fail(file, l.number, "too many paths in %files line \"" + trim(l.text) + "\" (expected SOURCE [DESTINATION])");
    block.copies.push_back({words[0], words.size() == 2 ? words[1] : words[0], l.number});
  }
  stage.files.push_back(std::move(block));
}

void parse_labels(std::vector<std::pair<std::string, std::string>>& labels, const std::vector<Line>& body) {
  for (const Line& l : body) {
    if (blank_or_comment(l.text)) continue;
    std::string text = trim(l.text);
    auto space = text.find_first_of(" \t");
    std::string key = text.substr(0, space);
    std::string value = space == std::string::npos ? "" : trim(text.substr(space));
    auto existing = std::find_if(labels.begin(), labels.end(), [&](const auto& entry) { return entry.first == key; });
    if (existing == labels.end()) {
      labels.emplace_back(key, value);
    } else {
      existing->second = value;
    }
  }
}

// The app a "%appSECTION NAME" line names, created on its first mention. Names become
// directories (/scif/apps/NAME) and variable suffixes, so only plain names are taken.
App& app_named(Stage& stage, const std::string& section, const std::string& args, int line, const std::string& file) {
  std::string name = args.substr(0, args.find_first_of(" \t"));
  if (name.empty()) fail(file, line, "%" + section + " needs the app's name (expected \"%" + section + " NAME\")");
  static const std::regex plain("^[A-Za-z0-9_][A-Za-z0-9_.-]*$");
  if (!std::regex_match(name, plain))
    fail(file, line, "SCIF app name \"" + name + "\" is not a plain name (expected letters, digits, _ . -)");
  auto existing = std::find_if(stage.apps.begin(), stage.apps.end(), [&](const App& app) { return app.name == name; });
  if (existing != stage.apps.end()) return *existing;
  App app;
  app.name = name;
  app.line = line;
  stage.apps.push_back(std::move(app));
  return stage.apps.back();
}

// %appfiles lines: SOURCE [DESTINATION], the destination inside the app's directory.
void parse_app_files(App& app, const std::vector<Line>& body, const std::string& file) {
  for (const Line& l : body) {
    if (blank_or_comment(l.text)) continue;
    std::vector<std::string> words = shell_words(l.text, file, l.number);
    if (words.size() > 2)
      fail(file, l.number, "too many paths in %appfiles line \"" + trim(l.text) + "\" (expected SOURCE [DESTINATION])");
    app.files.push_back({words[0], words.size() == 2 ? words[1] : words[0], l.number});
  }
}

Script* app_script(App& app, const std::string& section) {
  static const std::map<std::string, Script App::*> scripts = {
      {"appinstall", &App::install}, {"apprun", &App::run},   {"appenv", &App::env},
      {"apptest", &App::test},       {"apphelp", &App::help}, {"appstart", &App::start}};
  auto found = scripts.find(section);
  return found == scripts.end() ? nullptr : &(app.*(found->second));
}

void parse_app_section(Stage& stage, const std::string& section, const std::string& args, const std::vector<Line>& body,
                       int line, const std::string& file) {
  App& app = app_named(stage, section, args, line, file);
  if (Script* script = app_script(app, section)) {
    append_script(*script, "", body, line);
  } else if (section == "appfiles") {
    parse_app_files(app, body, file);
  } else {  // applabels
    parse_labels(app.labels, body);
  }
}

std::vector<Line> without_trailing_blank_lines(std::vector<Line> body) {
  while (!body.empty() && trim(body.back().text).empty()) body.pop_back();
  return body;
}

Stage parse_stage(const std::vector<Line>& lines, const std::string& file) {
  Stage stage;
  stage.line = lines.empty() ? 1 : lines.front().number;
  std::size_t first_section = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (section_line(lines[i].text)) {
      first_section = i;
      break;
    }
  parse_header(stage, lines, first_section, file);
  std::size_t i = first_section;
  while (i < lines.size()) {
    auto [name, args] = *section_line(lines[i].text);
    int line = lines[i].number;
    std::vector<Line> body;
    std::size_t j = i + 1;
    for (; j < lines.size() && !section_line(lines[j].text); ++j) body.push_back(lines[j]);
    body = without_trailing_blank_lines(std::move(body));
    if (Script* script = script_for(stage, name)) append_script(*script, args, body, line);
    else if (name == "files") parse_files_block(stage, args, body, line, file);
    else if (name == "labels")
      parse_labels(stage.labels, body);
    else if (name == "arguments") { /* read before templating */
    } else if (scif_sections().count(name) != 0)
      parse_app_section(stage, name, args, body, line, file);
    else fail(file, line, "unknown section %" + name + " (expected one of " + kValidSections + ")");
    i = j;
  }
  for (const Line& l : lines) stage.text += l.text + "\n";
  return stage;
}

}  // namespace

std::string Stage::get(const std::string& key) const {
  for (const auto& [k, v] : header)
    if (k == key) return v;
  return "";
}

bool Stage::has(const std::string& key) const {
  return std::any_of(header.begin(), header.end(), [&](const auto& entry) { return entry.first == key; });
}

bool is_valid_header_key(const std::string& key) {
  static const std::set<std::string> keys = {
      "bootstrap", "from",         "includecmd", "mirrorurl", "updateurl",   "osversion", "include",
      "library",   "registry",     "namespace",  "stage",     "product",     "user",      "regcode",
      "productpgp", "registerurl", "modules",    "fingerprints", "confurl",  "setopt",    "target",
      "frontend",  "filename",     "buildargs"};
  if (keys.count(key) != 0) return true;
  static const std::regex other_url("^otherurl[0-9]+$");
  return std::regex_match(key, other_url);
}

ParseResult parse_definition(const std::string& text, const ParseOptions& options) {
  const std::string& file = options.file_name;
  std::vector<Line> lines = split_lines(text);

  // Stages: every "Bootstrap:" line after the first starts the next one.
  std::vector<std::vector<Line>> stage_lines(1);
  bool seen_bootstrap = false;
  for (const Line& line : lines) {
    if (starts_stage(line.text)) {
      if (seen_bootstrap) stage_lines.emplace_back();
      seen_bootstrap = true;
    }
    stage_lines.back().push_back(line);
  }

  ParseResult result;
  result.definition.file = file;
  std::set<std::string> used;
  std::set<std::string> names;
  for (std::vector<Line>& group : stage_lines) {
    std::map<std::string, std::string> defaults = stage_arguments(group, file);
    apply_templates(group, defaults, options.build_args, used, file);
    Stage stage = parse_stage(group, file);
    stage.arguments = std::move(defaults);
    for (const FilesBlock& block : stage.files)
      if (!block.from_stage.empty() && names.count(block.from_stage) == 0)
        fail(file, block.line, "%files from \"" + block.from_stage + "\": no earlier stage has that name "
                               "(expected the Stage: name of an earlier stage)");
    if (!stage.name().empty() && !names.insert(stage.name()).second)
      fail(file, stage.line, "a second stage named \"" + stage.name() + "\" (expected unique Stage names)");
    result.definition.text += stage.text;
    result.definition.stages.push_back(std::move(stage));
  }

  for (const auto& [key, value] : options.build_args) {
    if (used.count(key) != 0) continue;
    std::string message = "build argument \"" + key + "\" is not used by " + file;
    if (!options.warn_unused_build_args)
      throw FormatError(message + " (remove it, or pass --warn-unused-build-args)");
    result.warnings.push_back(message);
  }
  return result;
}

std::map<std::string, std::string> parse_build_arg_file(const std::string& text, const std::string& file_name) {
  std::map<std::string, std::string> args;
  for (const Line& line : split_lines(text)) {
    if (blank_or_comment(line.text)) continue;
    std::string t = trim(line.text);
    auto eq = t.find('=');
    if (eq == std::string::npos || trim(t.substr(0, eq)).empty())
      fail(file_name, line.number, "bad build argument \"" + t + "\" (expected KEY=VALUE)");
    args[trim(t.substr(0, eq))] = unquote(trim(t.substr(eq + 1)));
  }
  return args;
}

std::pair<std::string, std::string> parse_build_arg(const std::string& argument) {
  auto eq = argument.find('=');
  if (eq == std::string::npos || eq == 0)
    throw FormatError("--build-arg \"" + argument + "\": expected KEY=VALUE");
  return {argument.substr(0, eq), argument.substr(eq + 1)};
}

}  // namespace capsa::build
