#pragma once
// Image references as users write them after `docker://`: [host[:port]/]path[:tag][@digest].
// Grammar and Docker Hub normalisation: distribution/reference (reference.go, normalize.go);
// default file names: docs/pull.md.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oci/digest.hpp"

namespace capsa::reference {

inline constexpr std::string_view kDockerHub = "docker.io";

struct ImageReference {
  std::string registry;            // "docker.io" for Docker Hub and its aliases; else host[:port] as given
  std::string repository;          // "library/ubuntu" for Docker Hub's one-component names
  std::optional<std::string> tag;  // "latest" when neither tag nor digest was given
  std::optional<oci::Digest> digest;
  std::string written;  // what followed "docker://", for default_sif_name()

  bool is_docker_hub() const { return registry == kDockerHub; }
  // The host the registry API answers on: registry-1.docker.io for Docker Hub.
  std::string api_host() const;
  // Keys to try, in order, in the "auths"/"credHelpers" maps of ~/.docker/config.json
  // (§B8): Docker Hub is stored under https://index.docker.io/v1/, others mostly as the
  // bare host[:port], sometimes with a scheme.
  std::vector<std::string> credentials_keys() const;
  // What to put after /manifests/: the digest when given (it wins over a tag), else the tag.
  std::string manifest_reference() const;
  // registry/repository[:tag][@digest], e.g. "docker.io/library/ubuntu:latest".
  std::string to_string() const;
  // Apptainer's name for `pull` without OUTPUT: the last path component of what the user
  // wrote, split at its first ':' into name and tag ("latest" when none): `<name>_<tag>.sif`.
  // Kept exactly, quirk included: "alpine@sha256:ab…" gives "alpine@sha256_ab….sif".
  std::string default_sif_name() const;
};

// Accepts "docker://REF" or a bare REF. Throws FormatError
// `invalid image reference "<text>": <why>`.
ImageReference parse_image_reference(std::string_view text);

}  // namespace capsa::reference
