#include "oci/select.hpp"

#include "oci/media_types.hpp"
#include "oci/quoted.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

bool is_fetchable(const Descriptor& entry) {
  return (is_manifest_type(entry.media_type) || is_index_type(entry.media_type)) && !is_attestation(entry);
}

std::string offered_platforms(const Index& index) {
  std::string list;
  for (const auto& entry : index.manifests) {
    if (!is_fetchable(entry) || !entry.platform) continue;
    if (!list.empty()) list += ", ";
    list += escaped(entry.platform->to_string());
  }
  return list.empty() ? "none" : list;
}

}  // namespace

bool is_attestation(const Descriptor& entry) {
  if (entry.annotations.count(std::string(kReferenceTypeAnnotation))) return true;
  return entry.platform && entry.platform->os == "unknown" && entry.platform->architecture == "unknown";
}

Descriptor select_manifest(const Index& index, const Platform& wanted, std::string_view image) {
  const Descriptor* best = nullptr;
  int best_fitness = -1;
  const Descriptor* first_without_platform = nullptr;
  for (const auto& entry : index.manifests) {
    if (!is_fetchable(entry)) continue;
    if (!entry.platform) {
      if (!first_without_platform) first_without_platform = &entry;
      continue;
    }
    auto fit = fitness(*entry.platform, wanted);
    if (fit && *fit > best_fitness) {
      best = &entry;
      best_fitness = *fit;
    }
  }
  if (best) return *best;
  if (first_without_platform) return *first_without_platform;
  throw FormatError("no image for " + escaped(wanted.to_string()) + " in " + escaped(image) +
                    "; available: " + offered_platforms(index));
}

}  // namespace capsa::oci
