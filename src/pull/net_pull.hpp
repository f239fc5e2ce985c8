#pragma once
// `capsa pull http(s)://…/IMAGE.sif` and `exec https://…`: a SIF served by a web server,
// downloaded with libcurl as Apptainer's net client does (internal/pkg/client/net): the
// default name is the URL's last path component, and the cache keys the download by the
// URL and the server's Last-Modified date (none: the current time, so nothing is reused).

#include <string>
#include <string_view>

#include "util/progress.hpp"

namespace capsa::pull {

bool is_http_reference(std::string_view reference);

// The URL's last path component, query and fragment left out ("image.sif").
std::string http_default_name(std::string_view url);

// What a HEAD request says about the file: its Last-Modified header, else its ETag, else
// "" (also when the server refuses HEAD). Throws Error for a 404 or an unreachable host.
std::string http_validator(const std::string& url);

// Downloads `url` into `fd` (empty, from offset 0), with progress under `label`, then
// checks that what arrived is a SIF (`path` names the file to read it back). Throws
// Error naming the URL: HTTP status, transfer failure, or not a SIF; Ctrl-C stops it.
void download_sif(const std::string& url, int fd, const std::string& path, Progress& progress);

}  // namespace capsa::pull
