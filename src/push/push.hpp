#pragma once
// `capsa push IMAGE.sif oras://REF`: the SIF becomes an ORAS artifact (oci/sif_artifact.hpp)
// byte-compatible with Apptainer's: config blob, then the SIF as the one layer (chunked,
// resumable upload), then the manifest, so the tag appears only once its content is all
// in the registry. Blobs the registry already has are not sent again.

#include <map>
#include <string>

#include "pull/pull.hpp"
#include "util/progress.hpp"

namespace capsa::push {

struct PushOptions {
  std::string image;      // the SIF file
  std::string reference;  // "oras://REF" as the user wrote it
  pull::RegistryAccess registry;
  std::map<std::string, std::string> annotations;  // --annotation KEY=VALUE, on the manifest
};

struct PushResult {
  std::string reference;        // registry/repository:tag pushed to
  std::string manifest_digest;  // what the tag now names
  bool layer_existed = false;   // the registry had the SIF already: only the manifest was sent
};

PushResult push(const PushOptions& options, Progress& progress);

}  // namespace capsa::push
