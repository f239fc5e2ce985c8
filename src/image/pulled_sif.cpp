#include "image/pulled_sif.hpp"

#include <nlohmann/json.hpp>

#include "image/metadata.hpp"
#include "sif/writer.hpp"

namespace capsa::image {
namespace {

std::string without_trailing_newlines(std::string text) {
  text.erase(text.find_last_not_of('\n') + 1);
  return text;
}

sif::ObjectInput json_object(std::string name, std::string data) {
  sif::ObjectInput input;
  input.type = sif::DataType::GenericJson;
  input.name = std::move(name);
  input.data = std::move(data);
  return input;
}

}  // namespace

std::string inspect_metadata_json(const OciSource& source) {
  Metadata metadata;
  metadata.labels = docker_labels(source);
  metadata.deffile = without_trailing_newlines(docker_deffile(source.reference, source.bootstrap));
  for (const ContainerFile& file : container_files_for_oci(source)) {
    if (file.path == "/.singularity.d/runscript") metadata.runscript = without_trailing_newlines(file.content);
    if (file.path == "/.singularity.d/startscript") metadata.startscript = without_trailing_newlines(file.content);
    if (file.path == "/.singularity.d/env/10-docker2singularity.sh" ||
        file.path == "/.singularity.d/env/90-environment.sh")
      metadata.environment[file.path] = without_trailing_newlines(file.content);
  }
  InspectOptions all;
  all.all = true;
  // format_inspect prints Apptainer's indented layout; the stored object is compact.
  return nlohmann::ordered_json::parse(format_inspect(metadata, all)).dump();
}

namespace {

std::vector<sif::ObjectInput> leading_objects(const OciSource& source) {
  sif::ObjectInput deffile;
  deffile.type = sif::DataType::Deffile;
  deffile.data = docker_deffile(source.reference, source.bootstrap);
  std::string config = source.config.is_object() ? source.config.dump() : "{}";
  return {deffile, json_object("inspect-metadata.json", inspect_metadata_json(source)),
          json_object("oci-config.json", config)};
}

sif::CreateOptions create_options(const OciSource& source, bool reproducible) {
  sif::CreateOptions options;
  options.time = source.build_time;
  if (reproducible) options.uuid = sif::Uuid{};
  return options;
}

}  // namespace

void write_pulled_sif(const std::string& output, const PulledSifParts& parts) {
  std::vector<sif::ObjectInput> objects = leading_objects(parts.source);
  objects.push_back(sif::partition_input(parts.squashfs_path, sif::FsType::Squashfs, sif::PartType::PrimSys,
                                         parts.source.architecture));
  sif::create(output, create_options(parts.source, parts.reproducible), objects);
}

void write_pulled_sif_in_place(const std::string& output, const OciSource& source, bool reproducible,
                               const PartitionWriter& write_squashfs) {
  sif::PartitionSlot slot(output, create_options(source, reproducible), leading_objects(source),
                          sif::partition_input("", sif::FsType::Squashfs, sif::PartType::PrimSys, source.architecture));
  std::uint64_t size = write_squashfs(slot.fd(), static_cast<std::uint64_t>(slot.offset()));
  slot.finish(static_cast<std::int64_t>(size));
}

}  // namespace capsa::image
