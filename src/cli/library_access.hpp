#pragma once
// The Library API a library:// command (push, delete, search) talks to: --library URL, else
// APPTAINER_LIBRARY / SINGULARITY_LIBRARY, else the host the reference names, else the
// active remote; with the token of the remote whose endpoint that is (library/client.hpp).
#include <memory>
#include <string>

#include "library/api.hpp"
#include "library/reference.hpp"

namespace capsa::cli {

// Error when --library and a host in the reference are both given (Apptainer's rule), or
// no library is configured. `nohttps`: a library named by host only is reached over http://.
std::unique_ptr<library::LibraryApi> library_api_for(const library::LibraryReference& ref,
                                                     const std::string& library_flag, bool nohttps);

}  // namespace capsa::cli
