#pragma once
// Shared by the overlay suites: overlay images made the way Apptainer makes them, and the
// e2fsprogs tools that look inside them from the host.
#include <string>

#include "support/process.hpp"

namespace capsa::runtime::testing {

// An e2fsprogs tool by name (they live in /usr/sbin, outside a user's PATH).
test::ProcessResult e2fs_tool(const std::vector<std::string>& argv);

// `path`: an ext3 image of `mib` MiB laid out as Apptainer's `overlay create` lays it
// out (mkfs.ext3 -d of a tree with upper/ and work/, 0755, the caller's).
void make_apptainer_ext3_overlay(const std::string& path, int mib = 64);

// The owner uid of `inside` (an absolute path in the file system) of an ext3 image, read
// with debugfs; -1 when it is not there.
long ext3_owner(const std::string& image, const std::string& inside);

// The content of a file in an ext3 image (debugfs cat).
std::string ext3_file(const std::string& image, const std::string& inside);

}  // namespace capsa::runtime::testing
