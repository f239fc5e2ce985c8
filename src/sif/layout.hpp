#pragma once
// The two on-disk records of a SIF file, decoded into plain structs, and back.
// Field order and sizes: docs/sif.md (apptainer/sif's pkg/sif sif.go).

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "sif/format.hpp"

namespace capsa::sif {

struct Header {
  std::array<char, kLaunchScriptSize> launch_script{};
  std::array<char, 10> magic{};
  std::array<char, 3> version{};
  std::array<char, 3> arch{};
  std::array<std::uint8_t, 16> uuid{};
  std::int64_t created_at = 0;
  std::int64_t modified_at = 0;
  std::int64_t descriptors_free = 0;
  std::int64_t descriptors_total = 0;
  std::int64_t descriptors_offset = 0;
  std::int64_t descriptors_size = 0;
  std::int64_t data_offset = 0;
  std::int64_t data_size = 0;

  std::string launch_script_text() const;  // trailing NULs trimmed
  std::string version_text() const;        // trailing NULs trimmed
  std::string arch_name() const;           // "amd64", or "unknown"
  std::string uuid_text() const;           // canonical 8-4-4-4-12 form
  bool uuid_is_nil() const;
};

struct PartitionInfo {
  FsType fs_type{};
  PartType part_type{};
  std::string arch;  // Go arch name, "unknown" when the code is not known
};

struct SignatureInfo {
  HashType hash_type{};
  std::array<std::uint8_t, 20> entity{};  // PGP fingerprint; all zero for DSSE
};

struct CryptoMessageInfo {
  FormatType format{};
  MessageType message{};
};

struct Descriptor {
  DataType data_type{};
  bool used = false;
  std::uint32_t id = 0;
  std::uint32_t raw_group_id = 0;  // as stored: OR'ed with kGroupMask
  std::uint32_t raw_linked_id = 0;  // as stored: a group link carries kGroupMask
  std::int64_t offset = 0;
  std::int64_t size = 0;
  std::int64_t size_with_padding = 0;
  std::int64_t created_at = 0;
  std::int64_t modified_at = 0;
  std::int64_t uid = 0;  // deprecated, always 0
  std::int64_t gid = 0;  // deprecated, always 0
  std::array<char, kNameSize> name{};
  std::array<std::uint8_t, kExtraSize> extra{};

  std::uint32_t group_id() const { return raw_group_id & ~kGroupMask; }  // 0: no group
  std::uint32_t linked_id() const { return raw_linked_id & ~kGroupMask; }  // 0: no link
  bool linked_to_group() const { return (raw_linked_id & kGroupMask) != 0; }
  std::string name_text() const;

  // Typed views of `extra`; callers check data_type first.
  PartitionInfo partition() const;
  SignatureInfo signature() const;
  CryptoMessageInfo crypto_message() const;
  SbomFormat sbom_format() const;
  std::string oci_digest() const;  // OCIRootIndex / OCIBlob: "sha256:..."

  void set_name(const std::string& name);
  void set_partition(FsType fs, PartType part, const std::string& arch_name);
  void set_signature(HashType hash, std::span<const std::uint8_t> entity);
  void set_crypto_message(FormatType format, MessageType message);
  void set_sbom_format(SbomFormat format);
  void set_oci_digest(const std::string& digest);
};

Header decode_header(std::span<const std::uint8_t, kHeaderSize> bytes);
std::array<std::uint8_t, kHeaderSize> encode_header(const Header& header);

Descriptor decode_descriptor(std::span<const std::uint8_t, kDescriptorSize> bytes);
std::array<std::uint8_t, kDescriptorSize> encode_descriptor(const Descriptor& descriptor);

}  // namespace capsa::sif
