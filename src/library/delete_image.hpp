#pragma once
// `capsa delete library://ENTITY/COLLECTION/CONTAINER[:TAG]`: DELETE
// /v1/images/ENTITY/COLLECTION/CONTAINER:TAG?arch=ARCH, as scs-library-client's DeleteImage.
#include <string>

#include "library/api.hpp"
#include "library/reference.hpp"

namespace capsa::library {

// Error naming the image when the library has no such image for `architecture`, or refuses.
void delete_library_image(LibraryApi& api, const LibraryReference& ref, const std::string& architecture);

}  // namespace capsa::library
