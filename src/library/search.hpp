#pragma once
// `capsa search TERM`: GET /v1/search?value=TERM&arch=ARCH[&signed=true], the Library API's
// search, printed as Apptainer and SingularityCE print it (the images it finds, each as
// library://ENTITY/COLLECTION/CONTAINER:TAGS with its description and signers).
#include <string>
#include <vector>

#include "library/api.hpp"

namespace capsa::library {

struct FoundImage {
  std::string entity, collection, container;
  std::vector<std::string> tags;
  std::string hash;  // "sha256.HEX", shown when the image has no tag
  std::string description;
  std::vector<std::string> fingerprints;  // of its signers, when the library knows them
};

// Error for a term shorter than 3 characters (the library refuses them) or a failed search.
std::vector<FoundImage> search_library(LibraryApi& api, const std::string& term, const std::string& architecture,
                                       bool signed_only);

// The listing: "Found N container images for ARCH matching "TERM":" and the images, sorted,
// or "No container images found for ARCH matching "TERM"."
std::string format_search(const std::vector<FoundImage>& images, const std::string& term,
                          const std::string& architecture);

}  // namespace capsa::library
