#include "runtime/gpu/cdi_spec.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "util/error.hpp"

namespace capsa::runtime::gpu {
namespace {

using nlohmann::json;

// The released versions, oldest first (specs-go/version.go); 0.1 and 0.2 predate the
// fields every runtime reads today and are not accepted.
constexpr std::array<std::string_view, 8> kVersions = {"0.3.0", "0.4.0", "0.5.0", "0.6.0",
                                                       "0.7.0", "0.8.0", "1.0.0", "1.1.0"};

int version_index(std::string_view version) {
  if (!version.empty() && version[0] == 'v') version.remove_prefix(1);
  auto it = std::find(kVersions.begin(), kVersions.end(), version);
  return it == kVersions.end() ? -1 : static_cast<int>(it - kVersions.begin());
}

// Aliases let a small YAML file name the same node exponentially often; a spec has a few
// thousand nodes at most.
constexpr std::size_t kMaxYamlNodes = 1 << 20;

// YAML -> the JSON tree the validator reads. A plain (unquoted) scalar that reads as an
// integer or a boolean becomes one, as go-yaml decodes it into the spec's typed fields;
// quoted scalars stay strings (nvidia-ctk writes name: "0").
json from_yaml(const YAML::Node& node, std::size_t& budget) {
  if (budget-- == 0) throw YAML::Exception(node.Mark(), "more than a million nodes (aliases?)");
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& item : node) object[item.first.as<std::string>()] = from_yaml(item.second, budget);
      return object;
    }
    case YAML::NodeType::Sequence: {
      json array = json::array();
      for (const auto& item : node) array.push_back(from_yaml(item, budget));
      return array;
    }
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() == "?") {  // plain
        std::int64_t number = 0;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
        if (error == std::errc() && end == text.data() + text.size() && !text.empty()) return number;
        if (text == "true") return true;
        if (text == "false") return false;
        if (text == "null" || text == "~") return nullptr;
      }
      return text;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
  }
  return nullptr;
}

// Reads one object's fields, rejecting the ones it does not know (the spec's rule).
class Fields {
 public:
  Fields(const json& object, std::string where, const std::string& file)
      : object_(object), where_(std::move(where)), file_(file) {
    if (!object.is_object()) fail("expected an object");
  }
  ~Fields() = default;
  Fields(const Fields&) = delete;
  Fields& operator=(const Fields&) = delete;

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(file_ + ": " + (where_.empty() ? "" : where_ + ": ") + what);
  }
  const std::string& where() const { return where_; }
  std::string at(const std::string& key) const { return (where_.empty() ? "" : where_ + ".") + key; }

  const json* get(const std::string& key) {
    known_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string string(const std::string& key, bool required) {
    const json* value = get(key);
    if (value == nullptr) {
      if (required) fail(key + " is missing");
      return "";
    }
    if (!value->is_string()) fail(key + " must be a string");
    return value->get<std::string>();
  }
  std::vector<std::string> strings(const std::string& key) {
    std::vector<std::string> out;
    const json* value = get(key);
    if (value == nullptr) return out;
    if (!value->is_array()) fail(key + " must be a list of strings");
    for (const json& item : *value) {
      if (!item.is_string()) fail(key + " must be a list of strings");
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  template <typename T>
  std::optional<T> integer(const std::string& key) {
    const json* value = get(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number_integer()) fail(key + " must be an integer");
    if (value->is_number_unsigned()) {
      auto u = value->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) fail(key + " is out of range");
      return static_cast<T>(u);
    }
    auto v = value->get<std::int64_t>();
    if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
        (v > 0 && static_cast<std::uint64_t>(v) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
      fail(key + " is out of range");
    return static_cast<T>(v);
  }
  // Call last: a field nobody asked for is unknown.
  void no_others() const {
    for (const auto& [key, value] : object_.items())
      if (!known_.count(key)) fail("unknown field \"" + key + "\"");
  }

 private:
  const json& object_;
  std::string where_;
  const std::string& file_;
  std::set<std::string> known_;
};

// What the file uses, against what its cdiVersion allows (specs-go/version.go).
struct Needs {
  int index = 0;
  std::string why;
  void at_least(std::string_view version, const std::string& feature) {
    int i = version_index(version);
    if (i > index) {
      index = i;
      why = feature;
    }
  }
};

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// pkg/parser: VENDOR and CLASS start with a letter, end alphanumeric, and hold
// alphanumerics, '_', '-', '.' between; NAME may also start with a digit and hold ':'.
bool valid_segment(std::string_view s, bool name) {
  if (s.empty()) return false;
  if (!(name ? alnum(s.front()) : std::isalpha(static_cast<unsigned char>(s.front())) != 0)) return false;
  if (!alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [name](char c) { return alnum(c) || c == '_' || c == '-' || c == '.' || (name && c == ':'); });
}

void check_env(Fields& f, const std::vector<std::string>& env, const std::string& key) {
  for (const std::string& e : env)
    if (e.find('=') == std::string::npos || e.front() == '=')
      f.fail(std::string(key).append(": \"").append(e).append("\" is not NAME=VALUE"));
}

CdiDeviceNode device_node(const json& value, const std::string& where, const std::string& file, Needs& needs) {
  Fields f(value, where, file);
  CdiDeviceNode n;
  n.path = f.string("path", true);
  if (n.path.empty()) f.fail("path is empty");
  n.host_path = f.string("hostPath", false);
  if (!n.host_path.empty()) needs.at_least("0.5.0", f.at("hostPath"));
  n.type = f.string("type", false);
  if (!n.type.empty() && n.type != "b" && n.type != "c" && n.type != "u" && n.type != "p")
    f.fail("type \"" + n.type + "\" is not b, c, u or p");
  n.major = f.integer<std::int64_t>("major");
  n.minor = f.integer<std::int64_t>("minor");
  n.file_mode = f.integer<std::uint32_t>("fileMode");
  n.permissions = f.string("permissions", false);
  if (n.permissions != "none" && n.permissions.find_first_not_of("rwm") != std::string::npos)
    f.fail("permissions \"" + n.permissions + "\" is not a combination of r, w and m");
  n.uid = f.integer<std::uint32_t>("uid");
  n.gid = f.integer<std::uint32_t>("gid");
  f.no_others();
  return n;
}

CdiMount mount(const json& value, const std::string& where, const std::string& file, Needs& needs) {
  Fields f(value, where, file);
  CdiMount m;
  m.host_path = f.string("hostPath", true);
  m.container_path = f.string("containerPath", true);
  if (m.host_path.empty()) f.fail("hostPath is empty");
  if (m.container_path.empty()) f.fail("containerPath is empty");
  m.options = f.strings("options");
  m.type = f.string("type", false);
  if (!m.type.empty()) needs.at_least("0.4.0", f.at("type"));
  f.no_others();
  return m;
}

CdiHook hook(const json& value, const std::string& where, const std::string& file) {
  Fields f(value, where, file);
  CdiHook h;
  h.hook_name = f.string("hookName", true);
  static const std::set<std::string> names = {"prestart",       "createRuntime", "createContainer",
                                              "startContainer", "poststart",     "poststop"};
  if (!names.count(h.hook_name)) f.fail("hookName \"" + h.hook_name + "\" is not an OCI hook");
  h.path = f.string("path", true);
  if (h.path.empty() || h.path[0] != '/') f.fail("path \"" + h.path + "\" must be absolute");
  h.args = f.strings("args");
  h.env = f.strings("env");
  check_env(f, h.env, "env");
  h.timeout = f.integer<int>("timeout");
  if (h.timeout && *h.timeout <= 0) f.fail("timeout must be greater than zero");
  f.no_others();
  return h;
}

template <typename Item, typename Parse>
std::vector<Item> list(Fields& f, const std::string& key, Parse parse) {
  std::vector<Item> out;
  const json* value = f.get(key);
  if (value == nullptr) return out;
  if (!value->is_array()) f.fail(key + " must be a list");
  for (std::size_t i = 0; i < value->size(); ++i)
    out.push_back(parse((*value)[i], f.at(key + "[" + std::to_string(i) + "]")));
  return out;
}

CdiEdits edits(const json& value, const std::string& where, const std::string& file, Needs& needs) {
  Fields f(value, where, file);
  CdiEdits e;
  e.env = f.strings("env");
  check_env(f, e.env, "env");
  e.device_nodes = list<CdiDeviceNode>(
      f, "deviceNodes", [&](const json& v, const std::string& w) { return device_node(v, w, file, needs); });
  e.mounts = list<CdiMount>(f, "mounts", [&](const json& v, const std::string& w) { return mount(v, w, file, needs); });
  e.hooks = list<CdiHook>(f, "hooks", [&](const json& v, const std::string& w) { return hook(v, w, file); });
  if (const json* gids = f.get("additionalGids")) {
    needs.at_least("0.7.0", f.at("additionalGids"));
    if (!gids->is_array()) f.fail("additionalGids must be a list of group ids");
    for (const json& gid : *gids) {
      if (!gid.is_number_unsigned() || gid.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max())
        f.fail("additionalGids must be a list of group ids");
      e.additional_gids.push_back(gid.get<std::uint32_t>());
    }
  }
  if (const json* rdt = f.get("intelRdt")) {
    needs.at_least("0.7.0", f.at("intelRdt"));
    if (!rdt->is_object()) f.fail("intelRdt must be an object");
    e.intel_rdt = true;
  }
  if (const json* net = f.get("netDevices")) {
    needs.at_least("1.1.0", f.at("netDevices"));
    if (!net->is_array()) f.fail("netDevices must be a list");
    e.net_devices = !net->empty();
  }
  f.no_others();
  return e;
}

void annotations(Fields& f, Needs& needs) {
  const json* value = f.get("annotations");
  if (value == nullptr) return;
  needs.at_least("0.6.0", f.at("annotations"));
  if (!value->is_object()) f.fail("annotations must be a map of strings");
  for (const auto& [key, item] : value->items())
    if (!item.is_string()) f.fail("annotations: \"" + key + "\" must be a string");
}

json parse_tree(std::string_view text, const std::string& path, CdiFormat format) {
  if (format == CdiFormat::Json) {
    try {
      return json::parse(text);
    } catch (const json::parse_error& e) {
      throw FormatError(path + ": not valid JSON (at byte " + std::to_string(e.byte) + ")");
    } catch (const json::exception& e) {  // e.g. a number too large for any type (out_of_range 406)
      throw FormatError(path + ": not valid JSON (" + std::string(e.what()) + ")");
    }
  }
  try {
    std::size_t budget = kMaxYamlNodes;
    return from_yaml(YAML::Load(std::string(text)), budget);
  } catch (const YAML::Exception& e) {
    throw FormatError(path + ": not valid YAML (line " + std::to_string(e.mark.line + 1) + ": " + e.msg + ")");
  }
}

}  // namespace

bool CdiEdits::empty() const {
  return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty() && additional_gids.empty() &&
         !intel_rdt && !net_devices;
}

CdiSpec parse_cdi_spec(std::string_view text, const std::string& path, CdiFormat format) {
  const json tree = parse_tree(text, path, format);
  Fields f(tree, "", path);
  CdiSpec spec;
  spec.path = path;
  Needs needs;
  spec.version = f.string("cdiVersion", true);
  const int declared = version_index(spec.version);
  if (declared < 0) f.fail("cdiVersion \"" + spec.version + "\" is not a CDI version capsa reads (0.3.0 to 1.1.0)");
  spec.kind = f.string("kind", true);
  auto slash = spec.kind.find('/');
  if (slash == std::string::npos || !valid_segment(std::string_view(spec.kind).substr(0, slash), false) ||
      !valid_segment(std::string_view(spec.kind).substr(slash + 1), false))
    f.fail("kind \"" + spec.kind + "\" is not VENDOR/CLASS (e.g. nvidia.com/gpu)");
  if (spec.kind.find('.', slash) != std::string::npos) needs.at_least("0.6.0", "a dot in kind's class");
  annotations(f, needs);
  if (const json* common = f.get("containerEdits")) spec.edits = edits(*common, "containerEdits", path, needs);
  const json* devices = f.get("devices");
  if (devices == nullptr || !devices->is_array() || devices->empty()) f.fail("devices must be a non-empty list");
  std::set<std::string> names;
  for (std::size_t i = 0; i < devices->size(); ++i) {
    Fields d((*devices)[i], "devices[" + std::to_string(i) + "]", path);
    CdiDevice device;
    device.name = d.string("name", true);
    if (!valid_segment(device.name, true)) d.fail("name \"" + device.name + "\" is not a valid CDI device name");
    if (std::isdigit(static_cast<unsigned char>(device.name.front())))
      needs.at_least("0.5.0", d.at("name") + " starting with a digit");
    if (!names.insert(device.name).second) d.fail("device \"" + device.name + "\" is defined twice");
    annotations(d, needs);
    const json* device_edits = d.get("containerEdits");
    if (device_edits != nullptr) device.edits = edits(*device_edits, d.at("containerEdits"), path, needs);
    if (device.edits.empty()) d.fail("device \"" + device.name + "\" has no containerEdits");
    d.no_others();
    spec.devices.push_back(std::move(device));
  }
  f.no_others();
  if (needs.index > declared)
    f.fail(needs.why + " needs cdiVersion " + std::string(kVersions[needs.index]) + " or later, the file says " +
           spec.version);
  return spec;
}

std::optional<CdiFormat> cdi_format_of(const std::string& path) {
  auto ends = [&](std::string_view suffix) {
    return path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".json")) return CdiFormat::Json;
  if (ends(".yaml")) return CdiFormat::Yaml;
  return std::nullopt;
}

std::optional<CdiName> parse_cdi_name(const std::string& text, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<CdiName> {
    if (why) *why = reason;
    return std::nullopt;
  };
  auto equals = text.find('=');
  auto slash = text.find('/');
  if (equals == std::string::npos || slash == std::string::npos || slash > equals)
    return fail("expected VENDOR/CLASS=NAME, e.g. nvidia.com/gpu=all");
  std::string_view vendor = std::string_view(text).substr(0, slash);
  std::string_view klass = std::string_view(text).substr(slash + 1, equals - slash - 1);
  std::string_view name = std::string_view(text).substr(equals + 1);
  if (!valid_segment(vendor, false)) return fail("the vendor \"" + std::string(vendor) + "\" is not valid");
  if (!valid_segment(klass, false)) return fail("the class \"" + std::string(klass) + "\" is not valid");
  if (!valid_segment(name, true)) return fail("the name \"" + std::string(name) + "\" is not valid");
  return CdiName{text.substr(0, equals), std::string(name)};
}

}  // namespace capsa::runtime::gpu
