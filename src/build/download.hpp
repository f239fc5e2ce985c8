#pragma once
// Fetching one file by URL for a bootstrap agent (busybox's MirrorURL): libcurl, redirects
// followed, TLS verified, http(s):// and file:// only.
#include <string>

namespace capsa::build {

// Writes the body at `url` to `path` (created 0600; the caller sets the mode). Throws
// Error naming the URL for a failed transfer or an HTTP status of 400 or more; nothing
// is left at `path` then.
void download_file(const std::string& url, const std::string& path);

}  // namespace capsa::build
