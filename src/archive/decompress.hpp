#pragma once
// Compressed archives (`docker save IMAGE | gzip > image.tar.gz`): their members have no
// byte range in the file, so they are decompressed once into a scratch file, which is
// then read in place like any tar (containers/image does the same for docker-archive:).

#include <string>

namespace capsa::archive {

// Whether the file starts with a gzip, zstd or xz stream (the compressions read here).
bool is_compressed_file(const std::string& path);

// Writes the decompressed stream of `path` to `output` (created, 0600). Throws
// FormatError naming `path` for corrupt or truncated data, SystemError for I/O.
void decompress_file(const std::string& path, const std::string& output);

}  // namespace capsa::archive
