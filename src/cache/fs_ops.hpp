#pragma once
// The few filesystem operations the cache repeats, written for many processes on many
// nodes acting on the same directories at once.

#include <string>

namespace capsa::cache {

// mkdir that treats "already exists" (another rank won the race) as success, provided
// it is a directory. Missing parents are created with the same mode.
void ensure_directory(const std::string& path, unsigned mode);

// Removes a file or a whole directory tree; a path that is already gone is fine.
void remove_tree(const std::string& path);

// fsync of a directory, so that a rename in it survives a crash of the node.
void sync_directory(const std::string& path);

// This node's name, for temporary names and lock holders ("unknown-host" if unset).
std::string host_name();

}  // namespace capsa::cache
