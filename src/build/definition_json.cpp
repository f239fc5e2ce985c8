#include "build/definition_json.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace capsa::build {
namespace {

using Json = nlohmann::ordered_json;

// "WHERE.KEY": the JSON field an error names.
std::string field(const std::string& where, const std::string& key) {
  std::string path = where;
  path += '.';
  path += key;
  return path;
}

class Renderer {
 public:
  explicit Renderer(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw FormatError(file_ + ": " + where + ": " + problem);
  }

  // The member `key` of `object` (at `where`): absent or null give nullptr.
  const Json* member(const Json& object, const std::string& key) const {
    auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }
  const Json& expect(const Json& value, Json::value_t type, const std::string& where) const {
    if (value.type() != type)
      fail(where, std::string("expected ") + Json(type).type_name() + ", found " + value.type_name());
    return value;
  }
  std::string string_at(const Json& object, const std::string& key, const std::string& where) const {
    const Json* value = member(object, key);
    if (value == nullptr) return "";
    return expect(*value, Json::value_t::string, where + "." + key).get<std::string>();
  }
  // One line of the text form: no line break may hide a second one in it.
  std::string one_line(const std::string& text, const std::string& where) const {
    if (text.find_first_of("\r\n") != std::string::npos) fail(where, "must be one line (it holds a line break)");
    return text;
  }

  std::string stage(const Json& def, const std::string& where) {
    expect(def, Json::value_t::object, where);
    std::string out;
    header(def, where, out);
    const Json none = Json::object();
    const Json* image_data = member(def, "imageData");
    const Json* build_data = member(def, "buildData");
    if (image_data) expect(*image_data, Json::value_t::object, where + ".imageData");
    if (build_data) expect(*build_data, Json::value_t::object, where + ".buildData");
    const Json& image = image_data ? *image_data : none;
    const Json& build = build_data ? *build_data : none;
    labels(image, where + ".imageData", out);
    files(build, where + ".buildData", out);

    const Json* image_scripts = member(image, "imageScripts");
    const Json* build_scripts = member(build, "buildScripts");
    if (image_scripts) expect(*image_scripts, Json::value_t::object, where + ".imageData.imageScripts");
    if (build_scripts) expect(*build_scripts, Json::value_t::object, where + ".buildData.buildScripts");
    const std::string image_where = where + ".imageData.imageScripts", build_where = where + ".buildData.buildScripts";
    const Json& is = image_scripts ? *image_scripts : none;
    const Json& bs = build_scripts ? *build_scripts : none;
    // Apptainer's parser puts %test in both; either one says it.
    const bool image_test = !script_of(is, "test", image_where).second.empty();
    for (const auto& [section, key, scripts, at] :
         std::vector<std::tuple<std::string, std::string, const Json*, std::string>>{
             {"help", "help", &is, image_where},
             {"environment", "environment", &is, image_where},
             {"runscript", "runScript", &is, image_where},
             {"test", "test", image_test ? &is : &bs, image_test ? image_where : build_where},
             {"startscript", "startScript", &is, image_where},
             {"pre", "pre", &bs, build_where},
             {"setup", "setup", &bs, build_where},
             {"post", "post", &bs, build_where},
             {"arguments", "arguments", &bs, build_where}}) {
      auto [args, body] = script_of(*scripts, key, at);
      section_text(section, args, body, field(at, key), out);
    }
    apps(def, where, out);
    return out;
  }

 private:
  void header(const Json& def, const std::string& where, std::string& out) const {
    const Json* header = member(def, "header");
    if (header == nullptr) fail(where, "no \"header\" (expected {\"bootstrap\": AGENT, ...})");
    expect(*header, Json::value_t::object, where + ".header");
    std::string bootstrap;
    std::string rest;
    for (const auto& [key, value] : header->items()) {
      const std::string at = field(where + ".header", key);
      std::string lower;
      for (char c : key) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!is_valid_header_key(lower))
        fail(at,
             "unknown header keyword (expected bootstrap, from, stage, registry, namespace, include, "
             "osversion, mirrorurl, fingerprints, ...; see docs/build.md)");
      std::string text = one_line(expect(value, Json::value_t::string, at).get<std::string>(), at);
      if (lower == "bootstrap") {
        bootstrap = text;
        continue;
      }
      rest += lower;
      rest += ": ";
      rest += text;
      rest += "\n";
    }
    if (bootstrap.find_first_not_of(" \t") == std::string::npos)
      fail(where + ".header", "no \"bootstrap\" (expected the agent, e.g. \"docker\")");
    // Bootstrap first: it is what starts a stage in the text form.
    out += "bootstrap: " + bootstrap + "\n" + rest + "\n";
  }

  void labels(const Json& image, const std::string& where, std::string& out) const {
    const Json* labels = member(image, "labels");
    if (labels == nullptr) return;
    expect(*labels, Json::value_t::object, where + ".labels");
    if (labels->empty()) return;
    out += "%labels\n";
    for (const auto& [key, value] : labels->items()) {
      const std::string at = field(where + ".labels", key);
      if (key.empty() || key.find_first_of(" \t\r\n") != std::string::npos) fail(at, "a label name must be one word");
      out += "    " + key + " " + one_line(expect(value, Json::value_t::string, at).get<std::string>(), at) + "\n";
    }
    out += "\n";
  }

  // A path of a %files line, quoted when it has blanks or quotes (the text parser's words).
  static std::string file_word(const std::string& path) {
    if (path.find_first_of(" \t'\"\\") == std::string::npos) return path;
    std::string quoted = "\"";
    for (char c : path) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    return quoted + "\"";
  }

  void files(const Json& build, const std::string& where, std::string& out) const {
    const Json* blocks = member(build, "files");
    if (blocks == nullptr) return;
    expect(*blocks, Json::value_t::array, where + ".files");
    for (std::size_t i = 0; i < blocks->size(); ++i) {
      const std::string at = where + ".files[" + std::to_string(i) + "]";
      const Json& block = expect((*blocks)[i], Json::value_t::object, at);
      const std::string args = one_line(string_at(block, "args", at), at + ".args");
      const Json* copies = member(block, "files");
      if (copies == nullptr) continue;
      expect(*copies, Json::value_t::array, at + ".files");
      if (copies->empty()) continue;
      out += "%files" + (args.empty() ? "" : " " + args) + "\n";
      for (std::size_t j = 0; j < copies->size(); ++j) {
        const std::string copy_at = at + ".files[" + std::to_string(j) + "]";
        const Json& copy = expect((*copies)[j], Json::value_t::object, copy_at);
        const std::string source = one_line(string_at(copy, "source", copy_at), copy_at + ".source");
        const std::string destination = one_line(string_at(copy, "destination", copy_at), copy_at + ".destination");
        if (source.empty()) fail(copy_at, "no \"source\" (expected the path to copy)");
        out += "    " + file_word(source) + (destination.empty() ? "" : " " + file_word(destination)) + "\n";
      }
      out += "\n";
    }
  }

  std::pair<std::string, std::string> script_of(const Json& scripts, const std::string& key,
                                                const std::string& where) const {
    const Json* script = member(scripts, key);
    if (script == nullptr) return {};
    expect(*script, Json::value_t::object, where + "." + key);
    return {one_line(string_at(*script, "args", where + "." + key), where + "." + key + ".args"),
            string_at(*script, "script", where + "." + key)};
  }

  // "%section args\nbody\n"; a body line that would read as a section header would cut
  // the section short in the text form.
  void section_text(const std::string& section, const std::string& args, const std::string& body,
                    const std::string& where, std::string& out) const {
    if (body.empty()) return;
    std::size_t start = 0;
    while (start < body.size()) {
      std::size_t end = body.find('\n', start);
      if (end == std::string::npos) end = body.size();
      if (end - start >= 2 && body[start] == '%' && std::isalpha(static_cast<unsigned char>(body[start + 1])) != 0)
        fail(where, "line \"" + body.substr(start, end - start) +
                        "\" would start a new section (a line may not begin with %LETTER; indent it)");
      start = end + 1;
    }
    out += "%" + section + (args.empty() ? "" : " " + args) + "\n" + body + (body.back() == '\n' ? "" : "\n") + "\n";
  }

  // SCIF apps: customData "appSECTION NAME" entries, app by app in appOrder (then any
  // other app in the order its first entry comes).
  void apps(const Json& def, const std::string& where, std::string& out) const {
    static const std::set<std::string> sections = {"appinstall", "applabels", "appfiles", "appenv",
                                                   "apptest",    "apphelp",   "apprun",   "appstart"};
    const Json* custom = member(def, "customData");
    if (custom == nullptr) return;
    expect(*custom, Json::value_t::object, where + ".customData");
    std::vector<std::string> order;
    if (const Json* listed = member(def, "appOrder")) {
      expect(*listed, Json::value_t::array, where + ".appOrder");
      for (std::size_t i = 0; i < listed->size(); ++i)
        order.push_back(expect((*listed)[i], Json::value_t::string, where + ".appOrder[" + std::to_string(i) + "]")
                            .get<std::string>());
    }
    std::vector<std::pair<std::string, std::string>> entries;  // app, key
    for (const auto& [key, value] : custom->items()) {
      const std::string at = field(where + ".customData", key);
      const auto space = key.find(' ');
      const std::string section = key.substr(0, space);
      const std::string app = space == std::string::npos ? "" : key.substr(space + 1);
      if (sections.count(section) == 0 || app.empty() || app.find_first_of(" \t\r\n") != std::string::npos)
        fail(at,
             "not a SCIF app section (expected \"appinstall NAME\", \"apprun NAME\", \"appenv NAME\", "
             "\"apptest NAME\", \"apphelp NAME\", \"applabels NAME\", \"appfiles NAME\" or \"appstart NAME\")");
      expect(value, Json::value_t::string, at);
      entries.emplace_back(app, key);
      if (std::find(order.begin(), order.end(), app) == order.end()) order.push_back(app);
    }
    for (const std::string& app : order)
      for (const auto& [name, key] : entries)
        if (name == app) {
          const std::string section = key.substr(0, key.find(' '));
          section_text(section, app, (*custom)[key].get<std::string>(), field(where + ".customData", key), out);
        }
  }

  std::string file_;
};

}  // namespace

std::string definition_text_from_json(const std::string& json, const std::string& file_name) {
  Json document;
  try {
    document = Json::parse(json);
  } catch (const Json::parse_error& e) {
    throw FormatError(file_name + ": not valid JSON (" + e.what() + ")");
  }
  Renderer renderer(file_name);
  if (document.is_object()) return renderer.stage(document, "definition");
  if (!document.is_array() || document.empty())
    renderer.fail("definition", std::string("expected an object (one stage) or a non-empty array of them, found ") +
                                    (document.is_array() ? "an empty array" : document.type_name()));
  std::string text;
  for (std::size_t i = 0; i < document.size(); ++i) text += renderer.stage(document[i], "[" + std::to_string(i) + "]");
  return text;
}

ParseResult parse_definition_json(const std::string& json, const ParseOptions& options) {
  ParseOptions text_options = options;
  text_options.file_name = options.file_name + " (its text form)";  // as build.cpp names it
  return parse_definition(definition_text_from_json(json, options.file_name), text_options);
}

}  // namespace capsa::build
