#include "sif/report.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>
#include <vector>

#include "util/human_size.hpp"

namespace capsa::sif {
namespace {

using Row = std::pair<std::string, std::string>;

// Two aligned columns: labels padded to the widest label plus `padding` spaces, the way
// Go's text/tabwriter lays out "label:\tvalue" lines. `indent` is an empty first cell.
std::string aligned_rows(const std::vector<Row>& rows, std::size_t padding, std::size_t indent) {
  std::size_t width = 0;
  for (const auto& [label, value] : rows) width = std::max(width, label.size());
  std::string out;
  for (const auto& [label, value] : rows) {
    out += std::string(indent, ' ') + label + std::string(width - label.size() + padding, ' ') + value + "\n";
  }
  return out;
}

std::string pad_right(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string group_text(const Descriptor& d) {
  return d.group_id() == 0 ? "NONE" : std::to_string(d.group_id());
}

std::string hex_upper(const std::uint8_t* data, std::size_t n) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 0xF];
  }
  return out;
}

// The type column of `sif list`: the type name plus its most useful metadata.
std::string type_summary(const Descriptor& d) {
  std::string name(name_of(d.data_type));
  switch (d.data_type) {
    case DataType::Partition: {
      PartitionInfo p = d.partition();
      return name + " (" + std::string(name_of(p.fs_type)) + "/" + std::string(name_of(p.part_type)) + "/" + p.arch + ")";
    }
    case DataType::Signature:
      return name + " (" + std::string(name_of(d.signature().hash_type)) + ")";
    case DataType::CryptoMessage: {
      CryptoMessageInfo c = d.crypto_message();
      return name + " (" + std::string(name_of(c.format)) + "/" + std::string(name_of(c.message)) + ")";
    }
    case DataType::Sbom:
      return name + " (" + std::string(name_of(d.sbom_format())) + ")";
    default:
      return name;
  }
}

}  // namespace

std::string format_utc(std::int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (::gmtime_r(&t, &tm) == nullptr) return std::to_string(unix_seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02d-%02d %02d:%02d:%02d +0000 UTC",
                static_cast<long long>(tm.tm_year) + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string header_report(const Image& image) {
  const Header& h = image.header();
  std::vector<Row> rows;
  std::string launch = h.launch_script_text();
  if (!launch.empty()) {
    if (launch.back() == '\n') launch.pop_back();
    rows.emplace_back("Launch Script:", launch);
  }
  rows.emplace_back("Version:", h.version_text());
  if (std::string arch = h.arch_name(); arch != "unknown") rows.emplace_back("Primary Architecture:", arch);
  if (!h.uuid_is_nil()) rows.emplace_back("ID:", h.uuid_text());
  if (h.created_at != kZeroTime) rows.emplace_back("Created At:", format_utc(h.created_at));
  if (h.modified_at != kZeroTime) rows.emplace_back("Modified At:", format_utc(h.modified_at));
  rows.emplace_back("Descriptors Free:", std::to_string(h.descriptors_free));
  rows.emplace_back("Descriptors Total:", std::to_string(h.descriptors_total));
  rows.emplace_back("Descriptors Offset:", std::to_string(h.descriptors_offset));
  rows.emplace_back("Descriptors Size:", human_size(h.descriptors_size));
  rows.emplace_back("Data Offset:", std::to_string(h.data_offset));
  rows.emplace_back("Data Size:", human_size(h.data_size));
  return aligned_rows(rows, 1, 0);
}

std::string list_report(const Image& image) {
  static const std::string rule(78, '-');
  std::string out = rule + "\n";
  out += pad_right("ID", 4) + " " + pad_right("|GROUP", 8) + " " + pad_right("|LINK", 8) + " " +
         pad_right("|SIF POSITION (start-end)", 26) + " |TYPE\n";
  out += rule + "\n";
  for (const Descriptor& d : image.objects()) {
    std::string link;
    if (d.linked_id() == 0) {
      link = pad_right("|NONE", 8);
    } else if (d.linked_to_group()) {
      link = pad_right("|" + std::to_string(d.linked_id()), 4) + " (G)";
    } else {
      link = pad_right("|" + std::to_string(d.linked_id()), 8);
    }
    std::string position = "|" + std::to_string(d.offset) + "-" + std::to_string(d.offset + d.size) + " ";
    out += pad_right(std::to_string(d.id), 4) + " " + pad_right("|" + group_text(d), 8) + " " + link + " " +
           pad_right(position, 26) + " |" + type_summary(d) + "\n";
  }
  return out;
}

std::string info_report(const Descriptor& d) {
  std::vector<Row> rows;
  rows.emplace_back("Data Type:", std::string(name_of(d.data_type)));
  rows.emplace_back("ID:", std::to_string(d.id));
  rows.emplace_back("Group ID:", group_text(d));
  std::string link = d.linked_id() == 0 ? "NONE" : std::to_string(d.linked_id()) + (d.linked_to_group() ? " (G)" : "");
  rows.emplace_back("Linked ID:", link);
  rows.emplace_back("Offset:", std::to_string(d.offset));
  rows.emplace_back("Size:", std::to_string(d.size));
  if (d.created_at != kZeroTime) rows.emplace_back("Created At:", format_utc(d.created_at));
  if (d.modified_at != kZeroTime) rows.emplace_back("Modified At:", format_utc(d.modified_at));
  if (std::string name = d.name_text(); !name.empty()) rows.emplace_back("Name:", name);
  switch (d.data_type) {
    case DataType::Partition: {
      PartitionInfo p = d.partition();
      rows.emplace_back("Filesystem Type:", std::string(name_of(p.fs_type)));
      rows.emplace_back("Partition Type:", std::string(name_of(p.part_type)));
      rows.emplace_back("Architecture:", p.arch);
      break;
    }
    case DataType::Signature: {
      SignatureInfo s = d.signature();
      rows.emplace_back("Hash Type:", std::string(name_of(s.hash_type)));
      // An all-zero fingerprint means "not a PGP signature" (DSSE): nothing to show.
      bool has_entity = std::any_of(s.entity.begin(), s.entity.end(), [](std::uint8_t b) { return b != 0; });
      if (has_entity) rows.emplace_back("Entity:", hex_upper(s.entity.data(), s.entity.size()));
      break;
    }
    case DataType::CryptoMessage: {
      CryptoMessageInfo c = d.crypto_message();
      rows.emplace_back("Format Type:", std::string(name_of(c.format)));
      rows.emplace_back("Message Type:", std::string(name_of(c.message)));
      break;
    }
    case DataType::Sbom:
      rows.emplace_back("Format:", std::string(name_of(d.sbom_format())));
      break;
    case DataType::OciRootIndex:
    case DataType::OciBlob:
      rows.emplace_back("Digest:", d.oci_digest());
      break;
    default:
      break;
  }
  return aligned_rows(rows, 2, 2);
}

}  // namespace capsa::sif
