#include "cli/library_access.hpp"

#include <unistd.h>

#include "library/remotes.hpp"
#include "util/error.hpp"

namespace capsa::cli {

std::unique_ptr<library::LibraryApi> library_api_for(const library::LibraryReference& ref,
                                                     const std::string& library_flag, bool nohttps) {
  if (!library_flag.empty() && !ref.host.empty())
    throw Error("give the library with --library or as the host in " + ref.written + ", not both");
  std::optional<std::string> flag;
  if (!library_flag.empty()) flag = library_flag;
  if (nohttps && !ref.host.empty() && library_flag.empty()) flag = "http://" + ref.host;
  library::LibraryEndpoint endpoint = library::library_endpoint(ref, flag, library::Remotes::load(), ::geteuid() == 0);
  registry::ClientOptions options = registry::options_from_environment();
  // A library given as http:// (a test or a site-internal server) is reached over plain
  // HTTP, its object store too; an https:// one never sends the client to plain HTTP.
  options.insecure_http = options.insecure_http || nohttps || endpoint.url.rfind("http://", 0) == 0;
  return std::make_unique<library::LibraryApi>(std::move(endpoint), std::move(options));
}

}  // namespace capsa::cli
