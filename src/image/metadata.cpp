#include "image/metadata.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

#include "image/directory_files.hpp"
#include "image/scif_apps.hpp"
#include "image/squashfs_files.hpp"
#include "util/error.hpp"
#include "util/path.hpp"

// Behaviour follows Apptainer's cmd/internal/cli/inspect.go and pkg/inspect/metadata.go
// (read for facts only): which files are shown, that trailing newlines are trimmed,
// the order of plain sections, and the JSON document produced by Go's encoding/json.

namespace capsa::image {
namespace {

constexpr std::string_view kMetadataDir = "/.singularity.d";

// Apptainer shows labels unless another section was asked for; --all means every
// section, and JSON output.
InspectOptions effective(InspectOptions o) {
  if (o.all) {
    o.labels = o.deffile = o.runscript = o.startscript = o.test = o.environment = o.helpfile = true;
    o.json = true;
    o.app.clear();  // --all shows every app
  }
  if (!(o.deffile || o.runscript || o.startscript || o.test || o.environment || o.helpfile || o.list_apps))
    o.labels = true;
  return o;
}

// Apptainer reads files through `while read` and trims the result's trailing newlines.
std::string trim_newlines(std::string text) {
  text.erase(text.find_last_not_of('\n') + 1);
  return text;
}

std::string read_script(const ImageFiles& root, const std::string& dir, std::string_view name) {
  auto content = root.read_file(dir + "/" + std::string(name));
  return content ? trim_newlines(std::move(*content)) : std::string();
}

// Length of the well-formed UTF-8 sequence at text[i], 0 if there is none (the
// ranges of RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  auto tail = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return byte(k) >= lo && byte(k) <= hi; };
  unsigned lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return tail(1) ? 2 : 0;
  if (lead == 0xE0) return tail(1, 0xA0) && tail(2) ? 3 : 0;
  if (lead == 0xED) return tail(1, 0x80, 0x9F) && tail(2) ? 3 : 0;
  if (lead >= 0xE1 && lead <= 0xEF) return tail(1) && tail(2) ? 3 : 0;
  if (lead == 0xF0) return tail(1, 0x90) && tail(2) && tail(3) ? 4 : 0;
  if (lead >= 0xF1 && lead <= 0xF3) return tail(1) && tail(2) && tail(3) ? 4 : 0;
  if (lead == 0xF4) return tail(1, 0x80, 0x8F) && tail(2) && tail(3) ? 4 : 0;
  return 0;
}

// Go's JSON decoder turns each byte of invalid UTF-8 into U+FFFD; nlohmann refuses
// such input, so labels are repaired the same way before parsing.
std::string replace_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      i += 1;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace

// labels.json is a map of strings. Like Go's json.Unmarshal into map[string]string:
// a value of another type keeps its key with an empty value; a document that is not
// a JSON object yields no labels. Either way Apptainer only warns.
std::map<std::string, std::string> parse_labels(const std::string& text, const std::string& where,
                                                std::vector<std::string>& warnings) {
  std::map<std::string, std::string> labels;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(replace_invalid_utf8(text));
  } catch (const nlohmann::json::exception& e) {
    warnings.push_back(where + ": unable to parse labels: " + e.what());
    return labels;
  }
  if (doc.is_null()) return labels;
  if (!doc.is_object()) {
    warnings.push_back(where + ": unable to parse labels: not a JSON object");
    return labels;
  }
  for (const auto& [key, value] : doc.items()) {
    if (value.is_string()) {
      labels[key] = value.get<std::string>();
    } else {
      labels[key] = "";
      if (!value.is_null()) warnings.push_back(where + ": label " + key + " is not a string");
    }
  }
  return labels;
}

namespace {

// Names `sh` would match with env/10-docker*.sh and env/9*-environment.sh, the two
// globs Apptainer's inspect uses (01-base.sh, 99-*.sh and the like are not shown).
bool shown_environment_file(std::string_view name) {
  auto matches = [&](std::string_view prefix, std::string_view suffix) {
    return name.size() >= prefix.size() + suffix.size() && name.starts_with(prefix) && name.ends_with(suffix);
  };
  return matches("10-docker", ".sh") || matches("9", "-environment.sh");
}

// `metadata_dir` is /.singularity.d or an app's scif directory, which shows only its
// 9*-environment.sh (Apptainer's inspect script).
std::map<std::string, std::string> read_environment(const ImageFiles& root, const std::string& metadata_dir) {
  std::map<std::string, std::string> scripts;
  const std::string dir = metadata_dir + "/env";
  const bool app = metadata_dir != kMetadataDir;
  auto names = root.list_directory(dir);
  if (!names) return scripts;
  for (const std::string& name : *names) {
    if (!shown_environment_file(name) || (app && name.starts_with("10-docker"))) continue;
    // `[ -f ]` in Apptainer's script: only regular files (after symlinks) count.
    if (auto content = root.read_file(dir + "/" + name)) scripts[dir + "/" + name] = trim_newlines(std::move(*content));
  }
  return scripts;
}

// Go's encoding/json escapes <, > and & (HTML safety) and U+2028/U+2029; nlohmann
// writes them as they are. They can only occur inside strings, so a textual pass
// over the document is exact.
std::string escape_like_go(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// pkg/inspect Metadata marshalled with json.MarshalIndent(v, "", "\t"): attribute
// keys in struct order (apps, environment, labels, runscript, test, helpfile,
// deffile, startscript), empty ones omitted, map keys sorted.
std::string to_json(const Metadata& m) {
  nlohmann::ordered_json attributes = nlohmann::ordered_json::object();
  if (!m.apps.empty()) {
    nlohmann::ordered_json apps = nlohmann::ordered_json::object();
    for (const auto& [name, app] : m.apps) {
      nlohmann::ordered_json entry = nlohmann::ordered_json::object();
      if (!app.environment.empty()) entry["environment"] = app.environment;
      if (!app.labels.empty()) entry["labels"] = app.labels;
      for (const auto& [key, value] : {std::pair{"runscript", &app.runscript},
                                       {"startscript", &app.startscript},
                                       {"test", &app.test},
                                       {"helpfile", &app.helpfile}})
        if (!value->empty()) entry[key] = *value;
      apps[name] = std::move(entry);
    }
    attributes["apps"] = std::move(apps);
  }
  if (!m.environment.empty()) attributes["environment"] = m.environment;
  if (!m.labels.empty()) attributes["labels"] = m.labels;
  auto add = [&](const char* key, const std::string& value) {
    if (!value.empty()) attributes[key] = value;
  };
  add("runscript", m.runscript);
  add("test", m.test);
  add("helpfile", m.helpfile);
  add("deffile", m.deffile);
  add("startscript", m.startscript);
  nlohmann::ordered_json doc;
  doc["data"]["attributes"] = std::move(attributes);
  doc["type"] = "container";
  return escape_like_go(doc.dump(1, '\t', false, nlohmann::json::error_handler_t::replace)) + "\n";
}

}  // namespace

squashfs::Reader open_primary_squashfs(const sif::Image& image) {
  const sif::Descriptor* primary = image.primary_partition();
  if (primary == nullptr) throw FormatError(image.path() + ": no primary system partition");
  const std::string where = image.path() + ": primary partition (object " + std::to_string(primary->id) + ")";
  sif::FsType fs = primary->partition().fs_type;
  if (fs != sif::FsType::Squashfs) {
    std::string name(sif::name_of(fs));
    if (name == "Unknown") name += " file system type " + std::to_string(static_cast<std::int32_t>(fs));
    throw FormatError(where + " is " + name + ", not squashfs");
  }
  auto offset = static_cast<std::uint64_t>(primary->offset);
  auto size = static_cast<std::uint64_t>(primary->size);
  if (size < 4 || !squashfs::has_squashfs_magic(image.fd(), offset))
    throw FormatError(where + " is marked Squashfs but does not start with the squashfs magic \"hsqs\"");
  return squashfs::Reader(image.fd(), offset, size, where);
}

namespace {

std::map<std::string, std::string> read_labels(const ImageFiles& root, const std::string& dir,
                                               std::vector<std::string>& warnings) {
  const std::string path = dir + "/labels.json";
  auto text = root.read_file(path);
  return text ? parse_labels(*text, root.label() + ": " + path, warnings) : std::map<std::string, std::string>{};
}

AppMetadata read_app(const ImageFiles& root, const std::string& app, const InspectOptions& o,
                     std::vector<std::string>& warnings) {
  const std::string dir = app_metadata_dir(app);
  AppMetadata a;
  if (o.labels) a.labels = read_labels(root, dir, warnings);
  if (o.runscript) a.runscript = read_script(root, dir, "runscript");
  if (o.startscript) a.startscript = read_script(root, dir, "startscript");
  if (o.test) a.test = read_script(root, dir, "test");
  if (o.helpfile) a.helpfile = read_script(root, dir, "runscript.help");
  if (o.environment) a.environment = read_environment(root, dir);
  return a;
}

}  // namespace

Metadata read_metadata(const ImageFiles& root, const InspectOptions& options) {
  const InspectOptions o = effective(options);
  Metadata m;
  if (!o.app.empty()) {
    // Apptainer reads the app's directory in place of /.singularity.d.
    require_app(root, o.app, root.label());
    m.apps[o.app] = read_app(root, o.app, o, m.warnings);
    return m;
  }
  const std::string dir(kMetadataDir);
  if (o.labels) m.labels = read_labels(root, dir, m.warnings);
  if (o.deffile) m.deffile = read_script(root, dir, "Singularity");
  if (o.runscript) m.runscript = read_script(root, dir, "runscript");
  if (o.startscript) m.startscript = read_script(root, dir, "startscript");
  if (o.test) m.test = read_script(root, dir, "test");
  if (o.helpfile) m.helpfile = read_script(root, dir, "runscript.help");
  if (o.environment) m.environment = read_environment(root, dir);
  if (o.all || o.list_apps)
    for (const std::string& app : list_apps(root))
      m.apps[app] = o.all ? read_app(root, app, o, m.warnings) : AppMetadata{};
  return m;
}

namespace {

// An encrypted image's files cannot be read without its key: its metadata comes from the
// inspect-metadata.json object the build stored beside the partition, as Apptainer's
// inspect reads it for encrypted images. Only the sections asked for are kept.
Metadata metadata_of_encrypted(const sif::Image& image, const InspectOptions& options) {
  const InspectOptions o = effective(options);
  for (const sif::Descriptor& d : image.objects()) {
    if (d.data_type != sif::DataType::GenericJson || d.name_text() != "inspect-metadata.json") continue;
    nlohmann::json doc = nlohmann::json::parse(image.read_object(d, 16 << 20), nullptr, false);
    if (!doc.is_object() || !doc.contains("data")) break;
    const nlohmann::json& a = doc["data"].value("attributes", nlohmann::json::object());
    auto text = [&](const nlohmann::json& from, const char* key) {
      return from.contains(key) && from[key].is_string() ? from[key].get<std::string>() : std::string();
    };
    auto map = [&](const nlohmann::json& from, const char* key) {
      std::map<std::string, std::string> out;
      if (from.contains(key) && from[key].is_object())
        for (const auto& [k, v] : from[key].items())
          if (v.is_string()) out[k] = v.get<std::string>();
      return out;
    };
    Metadata m;
    if (o.labels) m.labels = map(a, "labels");
    if (o.deffile) m.deffile = text(a, "deffile");
    if (o.runscript) m.runscript = text(a, "runscript");
    if (o.startscript) m.startscript = text(a, "startscript");
    if (o.test) m.test = text(a, "test");
    if (o.helpfile) m.helpfile = text(a, "helpfile");
    if (o.environment) m.environment = map(a, "environment");
    return m;
  }
  throw FormatError(image.path() +
                    ": the image is encrypted and carries no inspect-metadata.json object to "
                    "inspect (run it with its key to look inside)");
}

bool is_encrypted(const sif::Image& image) {
  const sif::Descriptor* primary = image.primary_partition();
  return primary != nullptr && (primary->partition().fs_type == sif::FsType::GocryptfsSquashfs ||
                                primary->partition().fs_type == sif::FsType::EncryptedSquashfs);
}

Metadata metadata_of_plain(const sif::Image& image, const InspectOptions& options) {
  SquashfsFiles files(open_primary_squashfs(image));
  // Named by the file the user gave, not by its partition.
  if (!effective(options).app.empty()) require_app(files, options.app, image.path());
  return read_metadata(files, options);
}

}  // namespace

Metadata read_metadata(const sif::Image& image, const InspectOptions& options) {
  // An app's metadata lies in the encrypted file system, which inspect cannot read.
  if (is_encrypted(image) && !effective(options).app.empty())
    throw Error(image.path() +
                ": --app cannot be inspected in an encrypted image (its apps are inside the "
                "encrypted file system; run the image with its key to look at them)");
  Metadata m = is_encrypted(image) ? metadata_of_encrypted(image, options) : metadata_of_plain(image, options);
  if (effective(options).deffile && m.deffile.empty()) {
    // Images built without a definition (siftool, old tools) may still carry one as
    // a SIF object; Apptainer reads that object first, we only as a fallback.
    for (const sif::Descriptor& d : image.objects()) {
      if (d.data_type != sif::DataType::Deffile) continue;
      m.deffile = trim_newlines(image.read_object(d, 16 << 20));
      break;
    }
  }
  return m;
}

Metadata read_metadata_at(const std::string& path, const InspectOptions& options) {
  if (is_directory(path)) return read_metadata(DirectoryFiles(path), options);
  return read_metadata(sif::Image::open(path), options);
}

std::string format_inspect(const Metadata& m, const InspectOptions& options) {
  const InspectOptions o = effective(options);
  if (o.json) return to_json(m);
  // Plain output: the app names with --list-apps, then each present section followed by
  // a newline, in this fixed order; with --app, the app's sections.
  std::string out;
  if (o.list_apps)
    for (const auto& [name, app] : m.apps) out += name + "\n";
  static const AppMetadata none;
  auto found = o.app.empty() ? m.apps.end() : m.apps.find(o.app);
  const AppMetadata& app = found == m.apps.end() ? none : found->second;
  if (!m.deffile.empty()) out += m.deffile + "\n";
  for (const auto& [own, of_app] : {std::pair{&m.runscript, &app.runscript},
                                    {&m.startscript, &app.startscript},
                                    {&m.test, &app.test},
                                    {&m.helpfile, &app.helpfile}}) {
    const std::string& section = !own->empty() ? *own : *of_app;
    if (!section.empty()) out += section + "\n";
  }
  for (const auto& [path, script] : !m.environment.empty() ? m.environment : app.environment)
    out.append("=== ").append(path).append(" ===\n").append(script).append("\n\n");
  for (const auto& [key, value] : !m.labels.empty() ? m.labels : app.labels)
    out.append(key).append(": ").append(value).append("\n");
  return out;
}

}  // namespace capsa::image
