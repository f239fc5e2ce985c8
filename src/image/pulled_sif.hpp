#pragma once
// The SIF of a `docker://` pull, laid out object for object as Apptainer writes it
// (docs/pull.md, docs/sif.md): definition file, inspect metadata,
// OCI config, then the squashfs root file system as the primary system partition.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "image/container_files.hpp"

namespace capsa::image {

struct PulledSifParts {
  std::string squashfs_path;   // the converted root file system
  OciSource source;            // config, reference, architecture, time
  bool reproducible = false;   // nil UUID (SOURCE_DATE_EPOCH / --reproducible)
};

// `inspect --all --json` of the generated files, compact, as the inspect-metadata.json object.
std::string inspect_metadata_json(const OciSource& source);

// Writes the SIF at `output` through a temporary name (nothing is left on failure).
void write_pulled_sif(const std::string& output, const PulledSifParts& parts);

// Writes the squashfs once, straight into the SIF's partition, instead of into a
// file of its own that is then copied (which doubled a pull's peak disk use).
// `write_squashfs(fd, offset)` writes the image into fd from `offset` on and returns
// its size. Nothing is left at `output` on failure; see sif::PartitionSlot.
using PartitionWriter = std::function<std::uint64_t(int fd, std::uint64_t offset)>;
void write_pulled_sif_in_place(const std::string& output, const OciSource& source, bool reproducible,
                               const PartitionWriter& write_squashfs);

}  // namespace capsa::image
