#include "library/delete_image.hpp"

#include "util/error.hpp"

namespace capsa::library {

void delete_library_image(LibraryApi& api, const LibraryReference& ref, const std::string& architecture) {
  if (!api.remove("/v1/images/" + ref.api_path() + "?arch=" + architecture))
    throw Error("library image " + ref.api_path() + " was not found for " + architecture + " at " + api.host() +
                "; nothing was deleted");
}

}  // namespace capsa::library
