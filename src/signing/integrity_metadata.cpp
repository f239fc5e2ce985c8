#include "signing/integrity_metadata.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "sif/layout.hpp"
#include "signing/digest.hpp"
#include "util/error.hpp"

namespace capsa::signing {
namespace {

template <typename T>
void put_le(std::string& out, T value) {
  auto bits = static_cast<std::make_unsigned_t<T>>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((bits >> (8 * i)) & 0xFF);
}

std::pair<std::string, std::string> split_digest(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    throw FormatError("malformed digest \"" + text + "\" in the signed metadata");
  return {text.substr(0, colon), text.substr(colon + 1)};
}

std::string digest_of_object(std::string_view algorithm, const sif::Image& image, const sif::Descriptor& d) {
  DigestHasher hasher(algorithm);
  hasher.update_from_file(image.fd(), static_cast<std::uint64_t>(d.offset), static_cast<std::uint64_t>(d.size));
  return std::string(algorithm) + ":" + hasher.finish_hex();
}

}  // namespace

std::string header_integrity_record(const sif::Header& header) {
  const auto raw = sif::encode_header(header);
  // Bytes 0-44 (launch script, magic, version) and the UUID at 48-63; the arch and the
  // counters and offsets after it change when objects are added, so they are left out.
  std::string record(reinterpret_cast<const char*>(raw.data()), 45);
  record.append(reinterpret_cast<const char*>(raw.data()) + 48, 16);
  return record;
}

std::string descriptor_integrity_record(const sif::Descriptor& d, std::uint32_t relative_id) {
  // Written by hand: the record is the reference implementation's own little-endian
  // field sequence (no library produces it); sizes are fixed by the SIF format.
  std::string record;
  record.reserve(557);
  put_le(record, static_cast<std::int32_t>(d.data_type));
  record += static_cast<char>(d.used ? 1 : 0);
  put_le(record, relative_id);
  put_le(record, d.raw_linked_id);
  put_le(record, d.size);
  put_le(record, d.created_at);
  put_le(record, d.uid);
  put_le(record, d.gid);
  record.append(d.name.data(), d.name.size());
  record.append(reinterpret_cast<const char*>(d.extra.data()), d.extra.size());
  return record;
}

std::vector<sif::Descriptor> group_objects(const sif::Image& image, std::uint32_t group_id) {
  std::vector<sif::Descriptor> out;
  for (const auto& d : image.objects())
    if (d.raw_group_id == (group_id | sif::kGroupMask)) out.push_back(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

std::uint32_t group_min_id(const sif::Image& image, std::uint32_t group_id) {
  std::uint32_t min_id = std::numeric_limits<std::uint32_t>::max();
  for (const auto& d : image.objects())
    if (d.raw_group_id == (group_id | sif::kGroupMask)) min_id = std::min(min_id, d.id);
  return min_id == std::numeric_limits<std::uint32_t>::max() ? 0 : min_id;
}

ImageMetadata compute_metadata(const sif::Image& image, std::uint32_t group_id,
                               const std::vector<sif::Descriptor>& objects, std::string_view algorithm) {
  ImageMetadata metadata;
  const std::string prefix = std::string(algorithm) + ":";
  metadata.header_digest = prefix + hex_digest(algorithm, header_integrity_record(image.header()));
  const std::uint32_t min_id = group_min_id(image, group_id);
  for (const auto& d : objects) {
    ObjectDigests o;
    o.relative_id = d.id - min_id;
    o.descriptor_digest = prefix + hex_digest(algorithm, descriptor_integrity_record(d, o.relative_id));
    o.object_digest = digest_of_object(algorithm, image, d);
    metadata.objects.push_back(o);
  }
  return metadata;
}

std::string to_json(const ImageMetadata& metadata) {
  nlohmann::ordered_json j;
  j["version"] = metadata.version;
  j["header"]["digest"] = metadata.header_digest;
  j["objects"] = nlohmann::ordered_json::array();
  for (const auto& o : metadata.objects) {
    nlohmann::ordered_json entry;
    entry["relativeId"] = o.relative_id;
    entry["descriptorDigest"] = o.descriptor_digest;
    entry["objectDigest"] = o.object_digest;
    j["objects"].push_back(entry);
  }
  return j.dump();
}

ImageMetadata parse_metadata(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw FormatError("the signed message is not JSON metadata");
  try {
    ImageMetadata metadata;
    metadata.version = j.at("version").get<int>();
    if (metadata.version != 1)
      throw FormatError("signed metadata version " + std::to_string(metadata.version) + " is not supported");
    metadata.header_digest = j.at("header").at("digest").get<std::string>();
    split_digest(metadata.header_digest);
    for (const auto& entry : j.at("objects")) {
      ObjectDigests o;
      o.relative_id = entry.at("relativeId").get<std::uint32_t>();
      o.descriptor_digest = entry.at("descriptorDigest").get<std::string>();
      o.object_digest = entry.at("objectDigest").get<std::string>();
      split_digest(o.descriptor_digest);
      split_digest(o.object_digest);
      metadata.objects.push_back(o);
    }
    return metadata;
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("the signed metadata is malformed: ") + e.what());
  }
}

bool digest_matches(const std::string& expected, std::string_view bytes) {
  auto [algorithm, hex] = split_digest(expected);
  return hex_digest(algorithm, bytes) == hex;
}

bool digest_matches_object(const std::string& expected, const sif::Image& image, const sif::Descriptor& d) {
  auto [algorithm, hex] = split_digest(expected);
  return digest_of_object(algorithm, image, d) == algorithm + ":" + hex;
}

}  // namespace capsa::signing
