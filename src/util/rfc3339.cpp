#include "util/rfc3339.hpp"

#include <ctime>

namespace capsa {

std::string rfc3339_utc(std::int64_t unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace capsa
