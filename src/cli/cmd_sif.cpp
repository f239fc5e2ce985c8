// `capsa sif`: the SIF toolbox, command for command and flag for flag the same as
// siftool / `apptainer sif`, so existing scripts keep working.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "oci/digest.hpp"
#include "sif/image.hpp"
#include "sif/report.hpp"
#include "sif/writer.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::cli {
namespace {

using namespace capsa::sif;

struct AddFlags {
  int datatype = 0;
  int parttype = 0;
  int partfs = 0;
  int partarch = 0;
  int signhash = 0;
  std::string signentity;
  std::string sbomformat;
  std::uint32_t groupid = 0;
  std::uint32_t link = 0;
  std::int64_t alignment = -1;
  std::string filename;
  bool filename_set = false;
};

DataType data_type_from_flag(int value) {
  if (value >= 1 && value <= 11) return static_cast<DataType>(0x4000 + value);
  throw Error("--datatype must be 1-11 (1 Deffile, 2 EnvVar, 3 Labels, 4 Partition, 5 Signature, 6 GenericJSON, "
              "7 Generic, 8 CryptoMessage, 9 SBOM, 10 OCIRootIndex, 11 OCIBlob)");
}

// The digest the reference library stores in OCI blob descriptors.
std::string sha256_of_file(const std::string& path) {
  UniqueFd fd = open_file(path, O_RDONLY);
  oci::Hasher hasher;
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) throw_errno(path);
    if (n == 0) break;
    hasher.update(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  }
  return hasher.finish().to_string();
}

std::vector<std::uint8_t> fingerprint_from_hex(const std::string& text) {
  std::vector<std::uint8_t> out;
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw Error("--signentity must be a hexadecimal fingerprint, got \"" + text + "\"");
  };
  if (text.size() % 2 != 0) throw Error("--signentity must have an even number of hex digits");
  for (std::size_t i = 0; i < text.size(); i += 2)
    out.push_back(static_cast<std::uint8_t>(nibble(text[i]) << 4 | nibble(text[i + 1])));
  if (out.size() != 20)
    throw Error("--signentity: a fingerprint has 20 bytes (40 hex digits), got " + std::to_string(out.size()));
  return out;
}

ObjectInput object_from_flags(const AddFlags& f, const std::string& object_path) {
  ObjectInput input;
  input.type = data_type_from_flag(f.datatype);
  input.data_path = object_path;
  input.group_id = f.groupid;  // as siftool: no --groupid means no group
  input.linked_id = f.link;
  input.alignment = f.alignment;
  if (f.filename_set) input.name = f.filename;
  Descriptor meta;
  switch (input.type) {
    case DataType::Partition: {
      if (f.parttype == 0 || f.partfs == 0 || f.partarch == 0)
        throw Error("a partition needs --partfs, --parttype and --partarch");
      std::string arch_code = std::to_string(f.partarch);
      if (arch_code.size() == 1) arch_code = "0" + arch_code;
      std::string arch = arch_name_from_code(arch_code + std::string(1, '\0'));
      meta.set_partition(static_cast<FsType>(f.partfs), static_cast<PartType>(f.parttype), arch);
      break;
    }
    case DataType::Signature: {
      if (f.signhash < 1 || f.signhash > 5) throw Error("--signhash must be 1-5 (1 SHA256, 2 SHA384, 3 SHA512, 4 BLAKE2s_256, 5 BLAKE2b_256)");
      meta.set_signature(static_cast<HashType>(f.signhash), fingerprint_from_hex(f.signentity));
      break;
    }
    case DataType::Sbom: {
      if (f.sbomformat.empty()) throw Error("an SBOM needs --sbomformat");
      auto format = sbom_format_from_name(f.sbomformat);
      if (!format) throw Error("unknown --sbomformat \"" + f.sbomformat + "\"");
      meta.set_sbom_format(*format);
      break;
    }
    case DataType::OciRootIndex:
    case DataType::OciBlob:
      meta.set_oci_digest(sha256_of_file(object_path));
      break;
    default:
      break;
  }
  input.extra = meta.extra;
  return input;
}

std::uint32_t parse_id(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long value = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value > 0xFFFFFFFFul || text[0] == '-')
    throw Error("invalid object ID \"" + text + "\" (expected a number, see `capsa sif list`)");
  return static_cast<std::uint32_t>(value);
}

void add_add(CLI::App& sif) {
  auto flags = std::make_shared<AddFlags>();
  auto sif_path = std::make_shared<std::string>();
  auto object_path = std::make_shared<std::string>();
  auto* cmd = sif.add_subcommand("add", "Add a data object to a SIF image");
  cmd->add_option("sif_path", *sif_path, "SIF image to modify")->required();
  cmd->add_option("object_path", *object_path, "File holding the object's data")->required();
  cmd->add_option("--datatype", flags->datatype,
                  "Object type: 1 Deffile, 2 EnvVar, 3 Labels, 4 Partition, 5 Signature, 6 GenericJSON, "
                  "7 Generic, 8 CryptoMessage, 9 SBOM, 10 OCIRootIndex, 11 OCIBlob")->required();
  cmd->add_option("--parttype", flags->parttype, "Partition type (with --datatype 4): 1 System, 2 PrimSys, 3 Data, 4 Overlay");
  cmd->add_option("--partfs", flags->partfs, "Partition file system (with --datatype 4): 1 Squash, 2 Ext3, 3 ImmuObj, 4 Raw");
  cmd->add_option("--partarch", flags->partarch,
                  "Partition architecture (with --datatype 4): 1 386, 2 amd64, 3 arm, 4 arm64, 5 ppc64, 6 ppc64le, "
                  "7 mips, 8 mipsle, 9 mips64, 10 mips64le, 11 s390x, 12 riscv64, 13 loong64");
  cmd->add_option("--signhash", flags->signhash, "Signature hash (with --datatype 5): 1 SHA256, 2 SHA384, 3 SHA512, 4 BLAKE2s_256, 5 BLAKE2b_256");
  cmd->add_option("--signentity", flags->signentity, "Signing entity fingerprint, 40 hex digits (with --datatype 5)");
  cmd->add_option("--sbomformat", flags->sbomformat,
                  "SBOM format (with --datatype 9): cyclonedx-json, cyclonedx-xml, github-json, spdx-json, spdx-rdf, "
                  "spdx-tag-value, spdx-yaml, syft-json");
  cmd->add_option("--groupid", flags->groupid, "Group ID (default: no group)");
  cmd->add_option("--link", flags->link, "ID of the object this one is linked to");
  cmd->add_option("--alignment", flags->alignment, "Data alignment in bytes (default: 4096 for partitions, none otherwise)");
  auto* name_opt = cmd->add_option("--filename", flags->filename, "Object name stored in the descriptor");
  cmd->callback([=] {
    flags->filename_set = name_opt->count() > 0;
    ObjectInput input = object_from_flags(*flags, *object_path);
    add_object(*sif_path, input, now_for_images());
  });
}

void add_id_command(CLI::App& sif, const char* name, const char* description,
                    std::function<void(std::uint32_t, const std::string&)> action) {
  auto id = std::make_shared<std::string>();
  auto path = std::make_shared<std::string>();
  auto* cmd = sif.add_subcommand(name, description);
  cmd->add_option("id", *id, "Object ID (see `capsa sif list`)")->required();
  cmd->add_option("sif_path", *path, "SIF image")->required();
  cmd->callback([=] { action(parse_id(*id), *path); });
}

void add_path_command(CLI::App& sif, const char* name, const char* description,
                      std::function<void(const std::string&)> action) {
  auto path = std::make_shared<std::string>();
  auto* cmd = sif.add_subcommand(name, description);
  cmd->add_option("sif_path", *path, "SIF image")->required();
  cmd->callback([=] { action(*path); });
}

void add_new(CLI::App& sif) {
  auto path = std::make_shared<std::string>();
  auto deterministic = std::make_shared<bool>(false);
  auto* cmd = sif.add_subcommand("new", "Create an empty SIF image (replacing any file at that path)");
  cmd->add_option("sif_path", *path, "SIF image to create")->required();
  cmd->add_flag("--deterministic", *deterministic, "Zero UUID and times, for reproducible images");
  cmd->callback([=] {
    CreateOptions options;
    // siftool new writes no launch script; `capsa build` and `pull` add the run-singularity line.
    options.launch_script.clear();
    if (*deterministic) {
      options.uuid = Uuid{};
      options.time = kZeroTime;
    } else {
      options.time = now_for_images();
    }
    create(*path, options, {});
  });
}

}  // namespace

std::int64_t now_for_images() {
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch && *epoch) {
    char* end = nullptr;
    long long value = std::strtoll(epoch, &end, 10);
    if (*end == '\0') return value;
    throw Error("SOURCE_DATE_EPOCH=\"" + std::string(epoch) + "\" is not a number of seconds");
  }
  return static_cast<std::int64_t>(std::time(nullptr));
}

void add_sif_command(CLI::App& app) {
  auto* sif = app.add_subcommand("sif", "Inspect and modify SIF images (the siftool commands)");
  sif->require_subcommand(1);
  add_new(*sif);
  add_add(*sif);
  add_id_command(*sif, "del", "Delete a data object from a SIF image", [](std::uint32_t id, const std::string& path) {
    delete_object(path, id, DeleteOptions{}, now_for_images());
  });
  add_id_command(*sif, "dump", "Write a data object's bytes to standard output",
                 [](std::uint32_t id, const std::string& path) {
                   Image image = Image::open(path);
                   image.copy_object_to(image.object(id), STDOUT_FILENO);
                 });
  add_id_command(*sif, "info", "Show everything a descriptor records about one object",
                 [](std::uint32_t id, const std::string& path) {
                   Image image = Image::open(path);
                   std::cout << info_report(image.object(id));
                 });
  add_id_command(*sif, "setprim", "Make a system partition the primary one", [](std::uint32_t id, const std::string& path) {
    set_primary_partition(path, id, now_for_images());
  });
  add_path_command(*sif, "header", "Show the global header", [](const std::string& path) {
    std::cout << header_report(Image::open(path));
  });
  add_path_command(*sif, "list", "List the data objects", [](const std::string& path) {
    std::cout << list_report(Image::open(path));
  });
}

}  // namespace capsa::cli
