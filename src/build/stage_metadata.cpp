#include "build/stage_metadata.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "build/host_ops.hpp"
#include "build/root_files.hpp"
#include "image/container_files.hpp"
#include "image/container_scripts.hpp"
#include "image/metadata.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/path.hpp"
#include "util/rfc3339.hpp"

namespace capsa::build {
namespace {

constexpr const char* kDir = "/.singularity.d";

}  // namespace

bool section_enabled(const std::set<std::string>& sections, const std::string& name) {
  if (sections.empty() || sections.count("all") != 0) return true;
  return sections.count(name) != 0;
}

std::string script_file(const Script& script) {
  std::string body = script.body;
  std::size_t first = body.find_first_not_of(" \t\n");
  std::string shebang = "#!/bin/sh";
  if (first != std::string::npos && body.compare(first, 2, "#!") == 0) {
    std::size_t end = body.find('\n', first);
    shebang = body.substr(first, end == std::string::npos ? std::string::npos : end - first);
    body = end == std::string::npos ? "" : body.substr(end + 1);
  }
  if (!script.args.empty()) shebang += " " + script.args;
  return shebang + "\n\n" + body;
}

std::map<std::string, std::string> automatic_labels(const Stage& stage, const StageContext& context) {
  std::map<std::string, std::string> labels;
  labels["org.label-schema.schema-version"] = "1.0";
  labels["org.label-schema.build-arch"] = context.architecture;
  labels["org.label-schema.build-date"] = image::build_date_label(context.time);
  labels["org.opencontainers.image.created"] = rfc3339_utc(context.time);
  labels["org.opencontainers.image.architecture"] = context.architecture;
  labels["org.label-schema.usage.capsa.version"] = context.capsa_version;
  for (const auto& [key, value] : stage.header) labels["org.label-schema.usage.singularity.deffile." + key] = value;
  if (!context.base_reference.empty()) labels["org.opencontainers.image.base.name"] = context.base_reference;
  if (stage.help.present && section_enabled(context.sections, "help")) {
    labels["org.label-schema.usage"] = "/.singularity.d/runscript.help";
    labels["org.label-schema.usage.singularity.runscript.help"] = "/.singularity.d/runscript.help";
  }
  return labels;
}

void prepare_base_layout(runtime::RootMode mode, const std::string& rootfs) {
  image::OciSource none;
  std::vector<image::ContainerFile> files = image::container_files_for_oci(none);
  in_chroot(mode, rootfs, "prepare /.singularity.d in " + rootfs, [&] {
    for (const image::ContainerFile& file : files) {
      // These say what the build is: written after %post from the definition.
      if (file.path == "/.singularity.d/runscript" || file.path == "/.singularity.d/labels.json" ||
          file.path == "/.singularity.d/Singularity" || file.path == "/.singularity.d/env/10-docker2singularity.sh")
        continue;
      if (path_exists(file.path)) continue;
      switch (file.kind) {
        case image::ContainerFile::Kind::Directory: make_directory(file.path, file.mode); break;
        case image::ContainerFile::Kind::File: write_text(file.path, file.content, file.mode); break;
        case image::ContainerFile::Kind::Symlink:
          if (::symlink(file.content.c_str(), file.path.c_str()) != 0) throw_errno("symlink " + file.path);
          break;
      }
    }
    if (!path_exists("/.singularity.d/env/91-environment.sh"))
      write_text("/.singularity.d/env/91-environment.sh", "", 0755);
  });
}

void write_stage_metadata(runtime::RootMode mode, const std::string& rootfs, const Stage& stage,
                          const StageContext& context) {
  const std::string dir = kDir;
  auto enabled = [&](const char* name) { return section_enabled(context.sections, name); };
  std::map<std::string, std::string> automatic = automatic_labels(stage, context);
  // The child prints its own warnings: it shares no memory with us once forked.
  in_chroot(mode, rootfs, "write /.singularity.d in " + rootfs, [&] {
    if (stage.runscript.present && enabled("runscript"))
      write_text(dir + "/runscript", script_file(stage.runscript), 0755);
    else if (!path_exists(dir + "/runscript"))
      write_text(dir + "/runscript",
                 "#!/bin/sh\n\necho \"There is no runscript defined for this container\"\n", 0755);
    if (stage.startscript.present && enabled("startscript"))
      write_text(dir + "/startscript", script_file(stage.startscript), 0755);
    if (stage.test.present && enabled("test")) write_text(dir + "/test", script_file(stage.test), 0755);
    if (stage.help.present && enabled("help")) write_text(dir + "/runscript.help", stage.help.body, 0644);

    if (stage.environment.present && enabled("environment")) {
      const std::string env = dir + "/env/90-environment.sh";
      std::string text = path_exists(env) ? read_text(env) : std::string(image::scripts::kEnvEnvironment);
      if (!text.empty() && text.back() != '\n') text += '\n';
      write_text(env, text + stage.environment.body, 0755);
    }

    if (enabled("labels")) {
      // An unreadable labels.json of the base image is replaced by the build's own.
      std::vector<std::string> ignored;
      std::map<std::string, std::string> labels = image::parse_labels(read_text(dir + "/labels.json"), "", ignored);
      for (const auto& [key, value] : automatic) labels[key] = value;
      for (const auto& [key, value] : stage.labels) {
        if (labels.count(key) != 0 && automatic.count(key) == 0 && !context.force) {
          log::warning("label " + key + " already exists in the base image and --force was not given: not replaced");
          continue;
        }
        labels[key] = value;
      }
      write_text(dir + "/labels.json", image::labels_json(labels), 0644);
    }

    // An image built from an image keeps the earlier definitions, numbered, as Apptainer does.
    if (path_exists(dir + "/Singularity")) {
      make_directory(dir + "/bootstrap_history", 0755);
      int n = 0;
      while (path_exists(dir + "/bootstrap_history/Singularity" + std::to_string(n))) ++n;
      if (::rename((dir + "/Singularity").c_str(), (dir + "/bootstrap_history/Singularity" + std::to_string(n)).c_str()) != 0)
        throw_errno("move the earlier definition to bootstrap_history");
    }
    write_text(dir + "/Singularity", stage.text, 0644);
  });
}

void put_file_in_root(runtime::RootMode mode, const std::string& rootfs, const std::string& path,
                      const std::string& content, unsigned file_mode) {
  in_chroot(mode, rootfs, "write " + path + " in " + rootfs,
            [&] { write_text(path, content, static_cast<mode_t>(file_mode)); });
}

void remove_file_in_root(runtime::RootMode mode, const std::string& rootfs, const std::string& path) {
  in_chroot(mode, rootfs, "remove " + path + " from " + rootfs, [&] {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_errno("remove " + path);
  });
}

}  // namespace capsa::build
