#pragma once
// The image configuration blob (image-spec config.md; Docker's uses the same keys):
// what a container runs with, and the uncompressed digests of its layers.
// Fields that matter at run time: OCI image-spec config.md.

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oci/digest.hpp"
#include "oci/manifest.hpp"
#include "oci/platform.hpp"

namespace capsa::oci {

// Configs are small (a few KiB; long histories reach some hundred KiB); this bounds
// what a hostile registry can make capsa hold in memory.
inline constexpr std::size_t kMaxConfigBytes = 16 * 1024 * 1024;

struct HistoryEntry {
  std::string created;
  std::string created_by;
  std::string author;
  std::string comment;
  bool empty_layer = false;  // no layer in rootfs.diff_ids belongs to this step
};

struct ImageConfig {
  // Top level.
  std::string architecture;
  std::string os;
  std::string variant;
  std::string created;  // RFC 3339, as written; empty when absent
  std::string author;
  std::string rootfs_type;       // "layers"
  std::vector<Digest> diff_ids;  // sha256 of each *uncompressed* layer, base first
  std::vector<HistoryEntry> history;

  // Under "config". Absent and null are both "not set" (Docker writes "Cmd": null).
  std::vector<std::string> env;  // NAME=VALUE
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
  std::string working_dir;
  std::string user;
  std::map<std::string, std::string> labels;
  std::vector<std::string> volumes;  // the keys of "Volumes"
  std::string stop_signal;

  // The "config" object as received (an empty object when absent), unknown keys and
  // nulls included; Apptainer stores it in the SIF as oci-config.json. Key order is not
  // kept (nlohmann::json sorts keys; Apptainer's Go encoder writes them in its struct's
  // order, not the registry's, so neither order is the one received).
  nlohmann::json config;

  // os/architecture/variant as the config declares them.
  Platform platform() const { return Platform{os, architecture, variant}; }
};

// Throws FormatError "image config: <field>: <why>" for anything that is not a
// well-formed config: not JSON, a field of the wrong type, rootfs.type other than
// "layers", a malformed diff_id.
ImageConfig parse_image_config(std::string_view bytes);

// Throws FormatError unless the config has one diff_id per manifest layer: the layers
// are verified against them after decompression.
void check_layers_match(const Manifest& manifest, const ImageConfig& config);

// For a tag that resolved to a single manifest (no index to choose from): a one-line
// warning when the config declares another platform than `wanted`, or none at all;
// nullopt when it fits. Not an error: configs are sometimes wrong (dotnet-docker #454).
std::optional<std::string> platform_mismatch_warning(const ImageConfig& config, const Platform& wanted);

}  // namespace capsa::oci
