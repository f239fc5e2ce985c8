#pragma once
// The /.singularity.d tree, bind-point directories and compatibility symlinks that an
// Apptainer-built image carries, generated for an image converted from an OCI/Docker
// image. Layout and semantics: docs/running.md and docs/environment.md.
// The scripts are capsa's own; they keep the conventions other runtimes look for
// (file names, the `eval "set ${SINGULARITY_OCI_RUN}"` line of a docker runscript).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace capsa::image {

struct ContainerFile {
  enum class Kind { File, Directory, Symlink };
  std::string path;  // absolute in the image, e.g. "/.singularity.d/runscript"
  Kind kind = Kind::File;
  unsigned mode = 0644;  // permission bits (no type bits)
  std::string content;   // file bytes, or the symlink target
  // Bind points (/tmp, /etc/hosts, ...) are created only where the image has nothing:
  // an image's own /tmp (mode 1777) must win over a generated 0755 directory.
  bool only_if_missing = false;
};

// What the files are made from: the image config's `config` object plus provenance.
struct OciSource {
  nlohmann::json config;       // the OCI/Docker image config's "config" object (may be empty)
  std::string reference;       // as in the definition file's "from:", e.g. "busybox:1.36"
  std::string bootstrap = "docker";  // its "bootstrap:": docker, or docker-archive, oci-archive, oci
  std::string architecture;    // Go/OCI architecture name, e.g. "amd64"
  std::int64_t build_time = 0; // Unix seconds (SOURCE_DATE_EPOCH when set)
  std::string capsa_version;
};

// Every file an Apptainer docker pull puts into the image, in creation order
// (directories before their contents).
std::vector<ContainerFile> container_files_for_oci(const OciSource& source);

// The pieces, exposed for tests and for `capsa build`.
std::string docker_runscript(const nlohmann::json& config);
std::string docker_environment(const nlohmann::json& config);
std::map<std::string, std::string> docker_labels(const OciSource& source);
// Tab-indented JSON object, keys sorted, no trailing newline (as Go's MarshalIndent).
std::string labels_json(const std::map<std::string, std::string>& labels);
// Apptainer's org.label-schema.build-date: "Monday_2_August_2021_14:9:36_CDT" (local time).
std::string build_date_label(std::int64_t unix_seconds);
// The generated definition file of a pull: "bootstrap: docker\nfrom: REF\n\n".
std::string docker_deffile(const std::string& reference, const std::string& bootstrap = "docker");

}  // namespace capsa::image
