#pragma once
// SIF (Singularity Image Format) 2.x: constants, enumerations and their names.
// Layout: docs/sif.md and the reference Go implementation (github.com/apptainer/sif). All integers are
// little-endian and structures are packed.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace capsa::sif {

inline constexpr std::size_t kLaunchScriptSize = 32;
inline constexpr std::size_t kHeaderSize = 128;
inline constexpr std::size_t kDescriptorSize = 585;
inline constexpr std::size_t kNameSize = 128;
inline constexpr std::size_t kExtraSize = 384;
inline constexpr std::string_view kMagic{"SIF_MAGIC\0", 10};
inline constexpr std::string_view kVersion{"01\0", 3};
inline constexpr std::int64_t kDefaultDescriptorsOffset = 4096;
inline constexpr std::int64_t kDefaultDescriptorCapacity = 48;
inline constexpr std::int64_t kPartitionAlignment = 4096;
// Group and link IDs that refer to a group are stored OR'ed with this mask.
inline constexpr std::uint32_t kGroupMask = 0xF0000000u;
inline constexpr std::uint32_t kDefaultGroup = 1;
// Go's zero time.Time as Unix seconds: what "deterministic" images store.
inline constexpr std::int64_t kZeroTime = -62135596800;
inline constexpr std::string_view kDefaultLaunchScript = "#!/usr/bin/env run-singularity\n";

enum class DataType : std::int32_t {
  Deffile = 0x4001,
  EnvVar = 0x4002,
  Labels = 0x4003,
  Partition = 0x4004,
  Signature = 0x4005,
  GenericJson = 0x4006,
  Generic = 0x4007,
  CryptoMessage = 0x4008,
  Sbom = 0x4009,
  OciRootIndex = 0x400A,
  OciBlob = 0x400B,
};

enum class FsType : std::int32_t {
  Squashfs = 1,
  Ext3 = 2,
  ImmuObj = 3,
  Raw = 4,
  EncryptedSquashfs = 5,
  GocryptfsSquashfs = 6
};
enum class PartType : std::int32_t { System = 1, PrimSys = 2, Data = 3, Overlay = 4 };
enum class HashType : std::int32_t { Sha256 = 1, Sha384 = 2, Sha512 = 3, Blake2s256 = 4, Blake2b256 = 5 };
enum class FormatType : std::int32_t { OpenPgp = 1, Pem = 2 };
enum class MessageType : std::int32_t { ClearSignature = 0x100, RsaOaep = 0x200 };
enum class SbomFormat : std::int32_t {
  CycloneDxJson = 1, CycloneDxXml, GitHubJson, SpdxJson, SpdxRdf, SpdxTagValue, SpdxYaml, SyftJson
};

// Names as the reference tool (siftool) prints them; unknown values give "Unknown".
std::string_view name_of(DataType t);
std::string_view name_of(FsType t);
std::string_view name_of(PartType t);
std::string_view name_of(HashType t);
std::string_view name_of(FormatType t);
std::string_view name_of(MessageType t);
std::string_view name_of(SbomFormat f);  // "unknown" (lower case) when unknown, as siftool

std::optional<SbomFormat> sbom_format_from_name(std::string_view name);

// Architecture codes: "NN\0" in the header and partition descriptors <-> Go arch names.
// Unknown codes map to "unknown"; unknown names to code "00".
std::string arch_name_from_code(std::string_view code3);
std::string arch_code_from_name(std::string_view name);  // 2 ASCII digits
// The SIF architecture name of the machine capsa runs on.
std::string host_arch_name();

}  // namespace capsa::sif
