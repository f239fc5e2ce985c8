#include "runtime/bind_spec.hpp"

#include <charconv>

#include "util/csv_fields.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

// One comma-separated piece of a -B list: its ':'-separated fields with the escapes
// resolved. Lists are split in a single pass so that an escape is read exactly once
// (`\,` `\:` and `\\` stand for the character; a backslash before anything else is kept),
// which lets format_bind_list write any path so that it parses back unchanged.
struct Piece {
  std::string text;                  // as written, for error messages
  std::vector<std::string> fields = std::vector<std::string>(1);
};

std::vector<Piece> split_list(std::string_view list) {
  std::vector<Piece> pieces(1);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    Piece& piece = pieces.back();
    if (c == '\\' && i + 1 < list.size() && (list[i + 1] == ',' || list[i + 1] == ':' || list[i + 1] == '\\')) {
      piece.fields.back() += list[i + 1];
      piece.text += list.substr(i, 2);
      ++i;
    } else if (c == ',') {
      pieces.emplace_back();
    } else {
      if (c == ':') piece.fields.emplace_back();
      else piece.fields.back() += c;
      piece.text += c;
    }
  }
  return pieces;
}

[[noreturn]] void bad(std::string_view spec, const std::string& why) {
  throw FormatError("invalid bind \"" + std::string(spec) + "\": " + why);
}

void check_destination(std::string_view spec, const std::string& destination) {
  if (destination.empty() || destination[0] != '/') bad(spec, "the destination must be an absolute path");
}

unsigned parse_id(std::string_view spec, std::string_view value) {
  unsigned id = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
  if (ec != std::errc() || end != value.data() + value.size() || id == 0)
    bad(spec, "id= needs a SIF object ID (a positive number)");
  return id;
}

void apply_option(std::string_view spec, BindSpec& bind, std::string_view option) {
  if (option == "ro") bind.read_only = true;
  else if (option == "rw") bind.read_only = false;
  else if (option.starts_with("image-src=")) bind.image_source = std::string(option.substr(10));
  else if (option.starts_with("id=")) bind.sif_id = parse_id(spec, option.substr(3));
  else bad(spec, "unknown option \"" + std::string(option) + "\" (valid: ro, rw, image-src=PATH, id=N)");
}

BindSpec parse_one(const Piece& piece) {
  const std::string_view spec = piece.text;
  const std::vector<std::string>& fields = piece.fields;
  if (fields.size() > 3) bad(spec, "too many ':' (expected SRC[:DEST[:OPTIONS]])");
  BindSpec bind;
  bind.source = fields[0];
  if (bind.source.empty()) bad(spec, "the source path is empty");
  bind.destination = fields.size() > 1 && !fields[1].empty() ? fields[1] : bind.source;
  // `-B /data:ro` is not a destination named "ro": Apptainer reads a lone option so.
  if (fields.size() == 2 && (fields[1] == "ro" || fields[1] == "rw")) {
    bind.destination = bind.source;
    apply_option(spec, bind, fields[1]);
  }
  if (fields.size() == 3 && !fields[2].empty()) apply_option(spec, bind, fields[2]);
  check_destination(spec, bind.destination);
  return bind;
}

}  // namespace

std::vector<BindSpec> parse_bind_list(std::string_view text) {
  std::vector<BindSpec> binds;
  // The list separator is a comma, but a comma also separates options of the bind before
  // (`/a:/b:ro,image-src=/x`): a piece that is one option and nothing else belongs to it.
  for (const Piece& piece : split_list(text)) {
    if (piece.text.empty()) continue;
    const std::string& only = piece.fields[0];
    bool option_only = piece.fields.size() == 1 &&
                       (only == "ro" || only == "rw" || only.starts_with("image-src=") || only.starts_with("id="));
    if (option_only && !binds.empty()) {
      apply_option(text, binds.back(), only);
      continue;
    }
    binds.push_back(parse_one(piece));
  }
  return binds;
}

namespace {

BindSpec mount_from_fields(std::string_view text, const CsvRecord& fields) {
  BindSpec bind;
  for (const std::string& field : fields) {
    auto eq = field.find('=');
    std::string key = field.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : field.substr(eq + 1);
    if (key == "type") {
      if (value != "bind") bad(text, "only type=bind is supported");
    } else if (key == "source" || key == "src") {
      bind.source = value;
    } else if (key == "destination" || key == "dst" || key == "target") {
      bind.destination = value;
    } else if (key == "ro" || key == "readonly") {
      bind.read_only = eq == std::string::npos || value == "true" || value == "1";
    } else if (key == "image-src") {
      bind.image_source = value;
    } else if (key == "id") {
      bind.sif_id = parse_id(text, value);
    } else if (key == "nonested") {
      bind.nested = false;
    } else if (key == "bind-propagation") {
      bad(text, "bind-propagation is not supported");
    } else {
      bad(text, "unknown key \"" + key + "\"");
    }
  }
  if (bind.source.empty()) bad(text, "src= is required");
  if (bind.destination.empty()) bad(text, "dst= is required");
  check_destination(text, bind.destination);
  return bind;
}

}  // namespace

std::vector<BindSpec> parse_mount(std::string_view text) {
  std::vector<CsvRecord> records;
  try {
    records = read_csv_records(text);
  } catch (const FormatError& e) {
    bad(text, e.what());
  }
  std::vector<BindSpec> binds;
  for (const CsvRecord& fields : records) binds.push_back(mount_from_fields(text, fields));
  return binds;
}

std::vector<BindSpec> binds_from_environment(const std::map<std::string, std::string>& environment) {
  auto value_of = [&](const std::string& name) -> std::string {
    for (const char* prefix : {"APPTAINER_", "SINGULARITY_"}) {
      auto it = environment.find(prefix + name);
      if (it != environment.end() && !it->second.empty()) return it->second;
    }
    return "";
  };
  std::vector<BindSpec> binds;
  for (const char* name : {"BIND", "BINDPATH"}) {
    std::string text = value_of(name);
    if (text.empty()) continue;
    auto more = with_context(std::string("$APPTAINER_") + name, [&] { return parse_bind_list(text); });
    binds.insert(binds.end(), more.begin(), more.end());
  }
  return binds;
}

std::string format_bind_list(const std::vector<BindSpec>& binds) {
  auto escape = [](const std::string& path) {
    std::string out;
    for (char c : path) {
      if (c == ',' || c == ':' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  };
  std::string out;
  for (const BindSpec& bind : binds) {
    if (!bind.nested) continue;
    if (!out.empty()) out += ',';
    out += escape(bind.source) + ":" + escape(bind.destination) + ":" + (bind.read_only ? "ro" : "rw");
    if (bind.image_source) out += ",image-src=" + escape(*bind.image_source);
    if (bind.sif_id) out += ",id=" + std::to_string(*bind.sif_id);
  }
  return out;
}

}  // namespace capsa::runtime
