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
  metadata.deffile = without_trailing_newlines(docker_deffile(source.reference));
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

void write_pulled_sif(const std::string& output, const PulledSifParts& parts) {
  sif::ObjectInput deffile;
  deffile.type = sif::DataType::Deffile;
  deffile.data = docker_deffile(parts.source.reference);

  std::string config = parts.source.config.is_object() ? parts.source.config.dump() : "{}";
  sif::ObjectInput partition = sif::partition_input(parts.squashfs_path, sif::FsType::Squashfs, sif::PartType::PrimSys,
                                                    parts.source.architecture);

  sif::CreateOptions options;
  options.time = parts.source.build_time;
  if (parts.reproducible) options.uuid = sif::Uuid{};
  sif::create(output, options,
              {deffile, json_object("inspect-metadata.json", inspect_metadata_json(parts.source)),
               json_object("oci-config.json", config), partition});
}

}  // namespace capsa::image
