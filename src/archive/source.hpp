#pragma once
// Images carried as files rather than pulled from a registry, in Apptainer's (and
// containers/image's) spellings:
//   docker-archive:PATH[:NAME[:TAG]|:@N]   a `docker save` / `skopeo copy … docker-archive:` tar
//   oci-archive:PATH[:TAG]                 a tar of an OCI image layout
//   oci:DIR[:TAG]                          an OCI image layout directory
// "docker-archive://PATH" (and the same for the others) is read as PATH: the "//" is
// how users write a URI, not part of the path. The path ends at the first ':'.

#include <optional>
#include <string>
#include <string_view>

namespace capsa::archive {

struct LocalSource {
  enum class Kind { DockerArchive, OciArchive, OciLayout };
  Kind kind = Kind::DockerArchive;
  std::string path;                 // the archive file or layout directory
  std::optional<std::string> name;  // NAME[:TAG] or @N (docker-archive), TAG (oci, oci-archive)
  std::string written;              // the whole reference as the user wrote it
};

// Whether `reference` starts with one of the three schemes above.
bool is_local_source(std::string_view reference);

// Throws FormatError for a reference with one of the schemes but no path.
LocalSource parse_local_source(std::string_view reference);

// "docker-archive", "oci-archive" or "oci".
std::string scheme_of(LocalSource::Kind kind);

// Apptainer's default output name for a `transport:ref` reference (uri.GetName): the last
// path component of ref, and the tag after its first ':' ("latest" without one), as
// NAME_TAG.sif; so oci:/x/layout:1.0 gives layout_1.0.sif and
// docker-archive:img.tar:busybox:1.36 gives img.tar_busybox.sif, as Apptainer names them.
std::string default_sif_name(std::string_view reference);

}  // namespace capsa::archive
