#pragma once
// A Container Device Interface spec file (github.com/cncf-tags/container-device-interface,
// SPEC.md; versions 0.3.0 to 1.1.0), JSON or YAML, read strictly as the reference library
// reads it: unknown fields, wrong types and fields newer than the file's cdiVersion are
// errors. Every error is one line naming the file and the entry
// ("/etc/cdi/nvidia.yaml: devices[2].containerEdits.mounts[0]: hostPath is missing").
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capsa::runtime::gpu {

struct CdiDeviceNode {
  std::string path;       // in the container
  std::string host_path;  // on the host; "" = path
  std::string type;       // "", b, c, u, p
  std::optional<std::int64_t> major, minor;
  std::string permissions;  // cgroup rwm (capsa sets up no device cgroup: informational)
  std::optional<std::uint32_t> file_mode, uid, gid;
};

struct CdiMount {
  std::string host_path;
  std::string container_path;
  std::string type;
  std::vector<std::string> options;
};

struct CdiHook {
  std::string hook_name;  // prestart, createRuntime, createContainer, startContainer, poststart, poststop
  std::string path;       // absolute
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout;  // seconds, > 0
};

struct CdiEdits {
  std::vector<std::string> env;  // NAME=VALUE
  std::vector<CdiDeviceNode> device_nodes;
  std::vector<CdiMount> mounts;
  std::vector<CdiHook> hooks;
  std::vector<std::uint32_t> additional_gids;
  bool intel_rdt = false;    // present (capsa refuses it when the device is asked for)
  bool net_devices = false;  // present (likewise)
  bool empty() const;
};

struct CdiDevice {
  std::string name;
  CdiEdits edits;
};

struct CdiSpec {
  std::string path;  // the file it came from
  std::string version;
  std::string kind;  // VENDOR/CLASS
  std::vector<CdiDevice> devices;
  CdiEdits edits;  // applied once when any of its devices is asked for
};

enum class CdiFormat { Json, Yaml };

// Parses and validates `text` (the contents of `path`); throws FormatError.
CdiSpec parse_cdi_spec(std::string_view text, const std::string& path, CdiFormat format);

// Json for *.json, Yaml for *.yaml; nullopt for any other name (not a spec file).
std::optional<CdiFormat> cdi_format_of(const std::string& path);

// A device name VENDOR/CLASS=NAME split into kind and name; nullopt with `why` set when it
// is not a fully qualified CDI name.
struct CdiName {
  std::string kind;
  std::string name;
};
std::optional<CdiName> parse_cdi_name(const std::string& text, std::string* why);

}  // namespace capsa::runtime::gpu
