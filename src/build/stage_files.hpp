#pragma once
// %files: copies from the host (symlinks followed, as `cp -L`) or, with `%files from
// STAGE`, from an earlier stage's tree (symlinks and owners kept), into the sandbox.
// Destinations are resolved inside the sandbox, so an image's symlink never leads a
// copy onto the host; missing parent directories are created.

#include <string>

#include "build/definition.hpp"
#include "runtime/sandbox_run.hpp"

namespace capsa::build {

// `from_rootfs` is the earlier stage's tree for `%files from STAGE`, "" for the host.
// `file` names the definition file for errors ("FILE:LINE: ...").
void copy_files(runtime::RootMode mode, const std::string& rootfs, const FilesBlock& block,
                const std::string& from_rootfs, const std::string& file);

}  // namespace capsa::build
