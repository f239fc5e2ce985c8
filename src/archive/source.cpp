#include "archive/source.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "util/error.hpp"

namespace capsa::archive {
namespace {

constexpr std::array<std::pair<std::string_view, LocalSource::Kind>, 3> kSchemes = {{
    {"docker-archive:", LocalSource::Kind::DockerArchive},
    {"oci-archive:", LocalSource::Kind::OciArchive},
    {"oci:", LocalSource::Kind::OciLayout},
}};

}  // namespace

bool is_local_source(std::string_view reference) {
  for (const auto& [scheme, kind] : kSchemes)
    if (reference.starts_with(scheme)) return true;
  return false;
}

std::string scheme_of(LocalSource::Kind kind) {
  for (const auto& [scheme, k] : kSchemes)
    if (k == kind) return std::string(scheme.substr(0, scheme.size() - 1));
  return "";
}

LocalSource parse_local_source(std::string_view reference) {
  LocalSource source;
  source.written = std::string(reference);
  std::string_view rest;
  bool found = false;
  for (const auto& [scheme, kind] : kSchemes) {
    if (!reference.starts_with(scheme)) continue;
    source.kind = kind;
    rest = reference.substr(scheme.size());
    found = true;
    break;
  }
  if (!found) throw FormatError("\"" + source.written + "\" is not a docker-archive:, oci-archive: or oci: reference");
  if (rest.starts_with("//")) rest.remove_prefix(2);
  const std::size_t colon = rest.find(':');
  source.path = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos && colon + 1 < rest.size()) source.name = std::string(rest.substr(colon + 1));
  if (source.path.empty())
    throw FormatError(source.written + ": no path (expected " + scheme_of(source.kind) +
                      (source.kind == LocalSource::Kind::OciLayout ? ":DIR[:TAG]" : ":FILE[:TAG]") + ")");
  return source;
}

std::string default_sif_name(std::string_view reference) {
  std::string_view ref = reference.substr(reference.find(':') + 1);
  while (ref.starts_with('/')) ref.remove_prefix(1);
  while (ref.ends_with('/')) ref.remove_suffix(1);
  std::string_view last = ref.substr(ref.rfind('/') == std::string_view::npos ? 0 : ref.rfind('/') + 1);
  std::string_view container = last;
  std::string_view tag = "latest";
  if (const std::size_t colon = last.find(':'); colon != std::string_view::npos) {
    container = last.substr(0, colon);
    std::string_view after = last.substr(colon + 1);
    tag = after.substr(0, std::min(after.find(':'), after.find(',')));
  }
  return std::string(container) + "_" + std::string(tag) + ".sif";
}

}  // namespace capsa::archive
