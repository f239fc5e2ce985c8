#pragma once
// Bind specifications as Singularity/Apptainer users write them:
//   -B/--bind SRC[:DEST[:OPTS]][,SRC2...]   (OPTS: ro, rw, image-src=PATH, id=N; `\,` `\:` `\\` escape;
//           not CSV: Apptainer takes -B whole, so that paths may hold commas)
//   --mount [type=bind,]src=...,dst=...[,ro][,image-src=...][,id=N]   (CSV as Go's encoding/csv
//           reads it, util/csv_fields.hpp; one mount per line; no type= means a bind)
//   SINGULARITY_BIND / APPTAINER_BIND / *_BINDPATH   (same syntax as -B)
// Reference: docs/running.md; Apptainer's user guide, "Bind Paths and Mounts".

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace capsa::runtime {

struct BindSpec {
  std::string source;       // host path (or, with image_source, the image file)
  std::string destination;  // path inside the container
  bool read_only = false;
  std::optional<std::string> image_source;  // image-src=: a path inside the image file
  std::optional<unsigned> sif_id;           // id=: a SIF data partition descriptor
  bool nested = true;                       // false: --mount nonested (not passed on in APPTAINER_BIND)

  bool operator==(const BindSpec&) const = default;
};

// One -B argument (possibly a comma-separated list). Throws FormatError naming the spec.
std::vector<BindSpec> parse_bind_list(std::string_view text);
// One --mount argument (or APPTAINER_MOUNT): a mount per line, as Apptainer reads them.
std::vector<BindSpec> parse_mount(std::string_view text);
// The binds requested through the environment, in Apptainer's order (APPTAINER_BIND,
// then APPTAINER_BINDPATH; the SINGULARITY_ names when the APPTAINER_ ones are unset).
std::vector<BindSpec> binds_from_environment(const std::map<std::string, std::string>& environment);
// Back to the -B syntax, for APPTAINER_BIND inside the container (nested runs repeat it).
std::string format_bind_list(const std::vector<BindSpec>& binds);

}  // namespace capsa::runtime
