#pragma once
// Whether an execution control list lets an image run (Apptainer's ShouldRun): the image
// falls in the execgroup of its directory, and that group's mode decides by who signed it.
// Signatures are checked with signing::verify_image against the administrator's keyrings
// only (signing::administrator_public_keyrings), never the user's.
//   whitelist    every signed object group verifies, and one listed key signed them all
//   whitestrict  every signed object group verifies, and every listed key signed them all
//   blacklist    no signature of the image names a listed key (verified or not: removing
//                a forbidden key from the keyring must not let its images through)
// Where capsa is stricter than Apptainer, which checks SIF files only: a sandbox
// directory or a bare squashfs/ext3 image carries no signature, so a whitelist or
// whitestrict group refuses it (a blacklist group lets it run).
#include <optional>
#include <string>
#include <vector>

#include "ecl/ecl_file.hpp"
#include "util/error.hpp"
#include "util/file_identity.hpp"

namespace capsa::ecl {

// The one line a refused run prints, naming the image, the rule (tagname, mode, dirpath)
// and the file.
class ExecutionRefused : public Error {
 public:
  using Error::Error;
};

// Throws ExecutionRefused when `list` forbids running `image` (a path: SIF, sandbox or
// other image); `keyring_files` are the OpenPGP key lists signatures are checked against.
// The image is opened once and judged through that open file; returns its identity, which
// the run must find again in the file it mounts (a file renamed over the path after the
// check is refused there), or nullopt when the list is not activated.
std::optional<FileIdentity> enforce(const ExecutionControlList& list, const std::string& image,
                                    const std::vector<std::string>& keyring_files);

}  // namespace capsa::ecl
