#include "sif/format.hpp"

#include <array>
#include <utility>

namespace capsa::sif {

std::string_view name_of(DataType t) {
  switch (t) {
    case DataType::Deffile: return "Def.FILE";
    case DataType::EnvVar: return "Env.Vars";
    case DataType::Labels: return "JSON.Labels";
    case DataType::Partition: return "FS";
    case DataType::Signature: return "Signature";
    case DataType::GenericJson: return "JSON.Generic";
    case DataType::Generic: return "Generic/Raw";
    case DataType::CryptoMessage: return "Cryptographic Message";
    case DataType::Sbom: return "SBOM";
    case DataType::OciRootIndex: return "OCI.RootIndex";
    case DataType::OciBlob: return "OCI.Blob";
  }
  return "Unknown";
}

std::string_view name_of(FsType t) {
  switch (t) {
    case FsType::Squashfs: return "Squashfs";
    case FsType::Ext3: return "Ext3";
    case FsType::ImmuObj: return "Archive";
    case FsType::Raw: return "Raw";
    case FsType::EncryptedSquashfs: return "Encrypted squashfs";
    case FsType::GocryptfsSquashfs:
      return "Gocryptfs squashfs";
  }
  return "Unknown";
}

std::string_view name_of(PartType t) {
  switch (t) {
    case PartType::System: return "System";
    case PartType::PrimSys: return "*System";
    case PartType::Data: return "Data";
    case PartType::Overlay: return "Overlay";
  }
  return "Unknown";
}

// siftool prints Go's crypto.Hash names.
std::string_view name_of(HashType t) {
  switch (t) {
    case HashType::Sha256: return "SHA-256";
    case HashType::Sha384: return "SHA-384";
    case HashType::Sha512: return "SHA-512";
    case HashType::Blake2s256: return "BLAKE2s-256";
    case HashType::Blake2b256: return "BLAKE2b-256";
  }
  return "Unknown";
}

std::string_view name_of(FormatType t) {
  switch (t) {
    case FormatType::OpenPgp: return "OpenPGP";
    case FormatType::Pem: return "PEM";
  }
  return "Unknown";
}

std::string_view name_of(MessageType t) {
  switch (t) {
    case MessageType::ClearSignature: return "Clear Signature";
    case MessageType::RsaOaep: return "RSA-OAEP";
  }
  return "Unknown";
}

namespace {
constexpr std::array<std::pair<SbomFormat, std::string_view>, 8> kSbomNames{{
    {SbomFormat::CycloneDxJson, "cyclonedx-json"},
    {SbomFormat::CycloneDxXml, "cyclonedx-xml"},
    {SbomFormat::GitHubJson, "github-json"},
    {SbomFormat::SpdxJson, "spdx-json"},
    {SbomFormat::SpdxRdf, "spdx-rdf"},
    {SbomFormat::SpdxTagValue, "spdx-tag-value"},
    {SbomFormat::SpdxYaml, "spdx-yaml"},
    {SbomFormat::SyftJson, "syft-json"},
}};

// Index i holds the Go architecture name of code i (code "00" is unknown).
constexpr std::array<std::string_view, 14> kArchNames{
    "unknown", "386",  "amd64",    "arm",      "arm64", "ppc64",   "ppc64le",
    "mips",    "mipsle", "mips64", "mips64le", "s390x", "riscv64", "loong64"};
}  // namespace

std::string_view name_of(SbomFormat f) {
  for (const auto& [format, name] : kSbomNames)
    if (format == f) return name;
  return "unknown";
}

std::optional<SbomFormat> sbom_format_from_name(std::string_view name) {
  if (name == "github") return SbomFormat::GitHubJson;
  for (const auto& [format, known] : kSbomNames)
    if (known == name) return format;
  return std::nullopt;
}

std::string arch_name_from_code(std::string_view code3) {
  if (code3.size() != 3 || code3[2] != '\0') return "unknown";
  char hi = code3[0], lo = code3[1];
  if (hi < '0' || hi > '9' || lo < '0' || lo > '9') return "unknown";
  std::size_t index = static_cast<std::size_t>((hi - '0') * 10 + (lo - '0'));
  if (index == 0 || index >= kArchNames.size()) return "unknown";
  return std::string(kArchNames[index]);
}

std::string arch_code_from_name(std::string_view name) {
  for (std::size_t i = 1; i < kArchNames.size(); ++i) {
    if (kArchNames[i] == name) {
      return {static_cast<char>('0' + i / 10), static_cast<char>('0' + i % 10)};
    }
  }
  return "00";
}

std::string host_arch_name() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__i386__)
  return "386";
#else
  return "unknown";
#endif
}

}  // namespace capsa::sif
