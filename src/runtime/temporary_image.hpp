#pragma once
// Images made for one run and removed after it, leaving nothing behind:
//  * --unsquash: the SIF unpacked into a temporary sandbox, run from there; also done,
//    with a note, where a container would mount its image with FUSE and /dev/fuse
//    cannot be opened (as Apptainer falls back to a temporary sandbox);
//  * --disable-cache with docker://: the SIF the CLI pulled into a temporary directory
//    (ActionRequest::temporary_directory) instead of the cache.
// The temporary directory goes under --tmpdir, else $APPTAINER_TMPDIR, $TMPDIR, /tmp.
// launch() normally ends in the command itself, with no capsa process left; here capsa
// stays as the parent of the container, passes on the signals a process sends it (the
// terminal's reach the container directly), removes the directory when the container
// ends, and then ends as it did (same exit code, or the same signal).
#include <string>

#include "runtime/launch.hpp"

namespace capsa::runtime {

// Whether `request` needs this (a temporary directory, or an image file to unpack).
bool needs_temporary_image(const ActionRequest& request);

// The parent directory for temporary images: `tmpdir`, else $APPTAINER_TMPDIR,
// $SINGULARITY_TMPDIR, $TMPDIR, /tmp.
std::string temporary_parent(const std::string& tmpdir);

// Makes the temporary image, runs launch() on it in a child, removes it; never returns.
[[noreturn]] void launch_with_temporary_image(const ActionRequest& request);

}  // namespace capsa::runtime
