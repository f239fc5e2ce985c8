#pragma once
// library:// references as SingularityCE's and Apptainer's pull take them:
//   library://CONTAINER[:TAG]                       entity "library", collection "default"
//   library://COLLECTION/CONTAINER[:TAG]            entity "library"
//   library://ENTITY/COLLECTION/CONTAINER[:TAG|@sha256:HEX]
//   library://HOST[:PORT]/ENTITY/COLLECTION/CONTAINER[...]   a library other than the default
// TAG defaults to "latest". A digest is sent to the library as the tag "sha256.HEX", the
// name the Library API gives an image by its hash, and the download is checked against it.
#include <optional>
#include <string>
#include <string_view>

namespace capsa::library {

struct LibraryReference {
  std::string written;  // as the user wrote it, for messages
  std::string host;     // empty unless the reference names one
  std::string entity = "library";
  std::string collection = "default";
  std::string container;
  std::string tag = "latest";         // "sha256.HEX" for a digest reference
  std::optional<std::string> digest;  // "sha256:HEX" when the reference pins one

  // ENTITY/COLLECTION/CONTAINER:TAG, the Library API's path of the image.
  std::string api_path() const { return entity + "/" + collection + "/" + container + ":" + tag; }
  // What `pull` names the file without an output name: CONTAINER_TAG.sif (Apptainer's
  // rule, pkg/util/uri Filename).
  std::string default_sif_name() const { return container + "_" + tag + ".sif"; }
};

bool is_library_reference(std::string_view text);

// Throws FormatError naming the reference and what is wrong with it.
LibraryReference parse_library_reference(std::string_view text);

}  // namespace capsa::library
