#pragma once
// Times as OCI annotations and Apptainer's labels write them: RFC 3339 in UTC, to the
// second ("2026-11-26T04:30:00Z").
#include <cstdint>
#include <string>

namespace capsa {

std::string rfc3339_utc(std::int64_t unix_seconds);

}  // namespace capsa
