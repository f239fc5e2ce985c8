#include "sif/layout.hpp"

#include <algorithm>
#include <cstring>

#include "util/error.hpp"

namespace capsa::sif {
namespace {

// Sequential little-endian field reader/writer over a fixed record. Hand-written because
// the records are two fixed packed structs; no serialisation library would be simpler.
class FieldReader {
 public:
  explicit FieldReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  template <typename T>
  T integer() {
    std::make_unsigned_t<T> value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      value |= static_cast<std::make_unsigned_t<T>>(static_cast<std::make_unsigned_t<T>>(bytes_[pos_ + i]) << (8 * i));
    pos_ += sizeof(T);
    return static_cast<T>(value);
  }
  template <typename Byte, std::size_t N>
  void raw(std::array<Byte, N>& out) {
    std::memcpy(out.data(), bytes_.data() + pos_, N);
    pos_ += N;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

class FieldWriter {
 public:
  explicit FieldWriter(std::span<std::uint8_t> bytes) : bytes_(bytes) {}
  template <typename T>
  void integer(T value) {
    auto u = static_cast<std::make_unsigned_t<T>>(value);
    for (std::size_t i = 0; i < sizeof(T); ++i) bytes_[pos_ + i] = static_cast<std::uint8_t>(u >> (8 * i));
    pos_ += sizeof(T);
  }
  template <typename Byte, std::size_t N>
  void raw(const std::array<Byte, N>& in) {
    std::memcpy(bytes_.data() + pos_, in.data(), N);
    pos_ += N;
  }

 private:
  std::span<std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

template <std::size_t N>
std::string trim_nuls(const std::array<char, N>& field) {
  std::string s(field.data(), N);
  s.erase(s.find_last_not_of('\0') + 1);
  return s;
}

std::int32_t extra_i32(const std::array<std::uint8_t, kExtraSize>& extra, std::size_t at) {
  FieldReader r(std::span<const std::uint8_t>(extra).subspan(at, 4));
  return r.integer<std::int32_t>();
}

void put_i32(std::array<std::uint8_t, kExtraSize>& extra, std::size_t at, std::int32_t value) {
  FieldWriter w(std::span<std::uint8_t>(extra).subspan(at, 4));
  w.integer(value);
}

}  // namespace

std::string Header::launch_script_text() const { return trim_nuls(launch_script); }
std::string Header::version_text() const { return trim_nuls(version); }
std::string Header::arch_name() const { return arch_name_from_code(std::string_view(arch.data(), 3)); }

std::string Header::uuid_text() const {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[uuid[i] >> 4];
    out += hex[uuid[i] & 0xF];
  }
  return out;
}

bool Header::uuid_is_nil() const {
  return std::all_of(uuid.begin(), uuid.end(), [](std::uint8_t b) { return b == 0; });
}

std::string Descriptor::name_text() const { return trim_nuls(name); }

PartitionInfo Descriptor::partition() const {
  PartitionInfo info;
  info.fs_type = static_cast<FsType>(extra_i32(extra, 0));
  info.part_type = static_cast<PartType>(extra_i32(extra, 4));
  info.arch = arch_name_from_code(std::string_view(reinterpret_cast<const char*>(extra.data()) + 8, 3));
  return info;
}

SignatureInfo Descriptor::signature() const {
  SignatureInfo info;
  info.hash_type = static_cast<HashType>(extra_i32(extra, 0));
  std::memcpy(info.entity.data(), extra.data() + 4, info.entity.size());
  return info;
}

CryptoMessageInfo Descriptor::crypto_message() const {
  return {static_cast<FormatType>(extra_i32(extra, 0)), static_cast<MessageType>(extra_i32(extra, 4))};
}

SbomFormat Descriptor::sbom_format() const { return static_cast<SbomFormat>(extra_i32(extra, 0)); }

std::string Descriptor::oci_digest() const {
  const char* begin = reinterpret_cast<const char*>(extra.data());
  return std::string(begin, strnlen(begin, extra.size()));
}

void Descriptor::set_name(const std::string& text) {
  if (text.size() > name.size()) throw FormatError("object name too long (" + std::to_string(text.size()) + " bytes, at most 128)");
  name.fill('\0');
  std::memcpy(name.data(), text.data(), text.size());
}

void Descriptor::set_partition(FsType fs, PartType part, const std::string& arch_name) {
  extra.fill(0);
  put_i32(extra, 0, static_cast<std::int32_t>(fs));
  put_i32(extra, 4, static_cast<std::int32_t>(part));
  std::string code = arch_code_from_name(arch_name);
  extra[8] = static_cast<std::uint8_t>(code[0]);
  extra[9] = static_cast<std::uint8_t>(code[1]);
}

void Descriptor::set_signature(HashType hash, std::span<const std::uint8_t> entity) {
  extra.fill(0);
  put_i32(extra, 0, static_cast<std::int32_t>(hash));
  // The entity field is 256 bytes; a PGP fingerprint uses the first 20.
  if (entity.size() > 256) throw FormatError("signing entity longer than 256 bytes");
  std::memcpy(extra.data() + 4, entity.data(), entity.size());
}

void Descriptor::set_crypto_message(FormatType format, MessageType message) {
  extra.fill(0);
  put_i32(extra, 0, static_cast<std::int32_t>(format));
  put_i32(extra, 4, static_cast<std::int32_t>(message));
}

void Descriptor::set_sbom_format(SbomFormat format) {
  extra.fill(0);
  put_i32(extra, 0, static_cast<std::int32_t>(format));
}

void Descriptor::set_oci_digest(const std::string& digest) {
  if (digest.size() >= extra.size()) throw FormatError("OCI digest too long");
  extra.fill(0);
  std::memcpy(extra.data(), digest.data(), digest.size());
}

Header decode_header(std::span<const std::uint8_t, kHeaderSize> bytes) {
  Header h;
  FieldReader r(bytes);
  r.raw(h.launch_script);
  r.raw(h.magic);
  r.raw(h.version);
  r.raw(h.arch);
  r.raw(h.uuid);
  h.created_at = r.integer<std::int64_t>();
  h.modified_at = r.integer<std::int64_t>();
  h.descriptors_free = r.integer<std::int64_t>();
  h.descriptors_total = r.integer<std::int64_t>();
  h.descriptors_offset = r.integer<std::int64_t>();
  h.descriptors_size = r.integer<std::int64_t>();
  h.data_offset = r.integer<std::int64_t>();
  h.data_size = r.integer<std::int64_t>();
  return h;
}

std::array<std::uint8_t, kHeaderSize> encode_header(const Header& h) {
  std::array<std::uint8_t, kHeaderSize> out{};
  FieldWriter w(out);
  w.raw(h.launch_script);
  w.raw(h.magic);
  w.raw(h.version);
  w.raw(h.arch);
  w.raw(h.uuid);
  w.integer(h.created_at);
  w.integer(h.modified_at);
  w.integer(h.descriptors_free);
  w.integer(h.descriptors_total);
  w.integer(h.descriptors_offset);
  w.integer(h.descriptors_size);
  w.integer(h.data_offset);
  w.integer(h.data_size);
  return out;
}

Descriptor decode_descriptor(std::span<const std::uint8_t, kDescriptorSize> bytes) {
  Descriptor d;
  FieldReader r(bytes);
  d.data_type = static_cast<DataType>(r.integer<std::int32_t>());
  d.used = r.integer<std::uint8_t>() != 0;
  d.id = r.integer<std::uint32_t>();
  d.raw_group_id = r.integer<std::uint32_t>();
  d.raw_linked_id = r.integer<std::uint32_t>();
  d.offset = r.integer<std::int64_t>();
  d.size = r.integer<std::int64_t>();
  d.size_with_padding = r.integer<std::int64_t>();
  d.created_at = r.integer<std::int64_t>();
  d.modified_at = r.integer<std::int64_t>();
  d.uid = r.integer<std::int64_t>();
  d.gid = r.integer<std::int64_t>();
  r.raw(d.name);
  r.raw(d.extra);
  return d;
}

std::array<std::uint8_t, kDescriptorSize> encode_descriptor(const Descriptor& d) {
  std::array<std::uint8_t, kDescriptorSize> out{};
  FieldWriter w(out);
  w.integer(static_cast<std::int32_t>(d.data_type));
  w.integer(static_cast<std::uint8_t>(d.used ? 1 : 0));
  w.integer(d.id);
  w.integer(d.raw_group_id);
  w.integer(d.raw_linked_id);
  w.integer(d.offset);
  w.integer(d.size);
  w.integer(d.size_with_padding);
  w.integer(d.created_at);
  w.integer(d.modified_at);
  w.integer(d.uid);
  w.integer(d.gid);
  w.raw(d.name);
  w.raw(d.extra);
  return out;
}

}  // namespace capsa::sif
