#include "oci/platform.hpp"

#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <vector>

#include "oci/quoted.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// uname -m and Debian architecture names -> (registry architecture, implied variant).
struct ArchAlias {
  std::string_view name, architecture, variant;
};
constexpr ArchAlias kArchAliases[] = {{"x86_64", "amd64", ""}, {"x86-64", "amd64", ""},   {"aarch64", "arm64", "v8"},
                                      {"armhf", "arm", "v7"},  {"armel", "arm", "v6"},    {"armv7l", "arm", "v7"},
                                      {"armv6l", "arm", "v6"}, {"armv5tel", "arm", "v5"}, {"i386", "386", ""},
                                      {"i686", "386", ""},     {"ppc64el", "ppc64le", ""}};

// "v8", "v8.2", "8" -> 800, 802, 800: levels of one architecture family, comparable.
std::optional<int> level_of(std::string_view variant) {
  if (!variant.empty() && variant.front() == 'v') variant.remove_prefix(1);
  int major = 0, minor = 0, *part = &major;
  if (variant.empty() || variant.size() > 6) return std::nullopt;
  for (char c : variant) {
    if (c == '.' && part == &major) {
      part = &minor;
    } else if (c >= '0' && c <= '9') {
      *part = *part * 10 + (c - '0');
    } else {
      return std::nullopt;
    }
  }
  if (minor >= 100) return std::nullopt;
  return major * 100 + minor;
}

// Platform parts as registries write them; anything else cannot match an index entry.
bool is_platform_word(std::string_view word) {
  if (word.empty()) return false;
  for (char c : word) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Architectures whose variants are ordered feature levels: a lower level runs on a higher.
bool has_ordered_variants(std::string_view architecture) {
  return architecture == "amd64" || architecture == "arm64" || architecture == "arm";
}

}  // namespace

std::string Platform::to_string() const {
  std::string s = os + "/" + architecture;
  if (!variant.empty()) s += "/" + variant;
  return s;
}

Platform normalized(Platform p) {
  p.os = lower(std::move(p.os));
  p.architecture = lower(std::move(p.architecture));
  p.variant = lower(std::move(p.variant));
  for (const auto& alias : kArchAliases) {
    if (p.architecture == alias.name) {
      p.architecture = alias.architecture;
      if (p.variant.empty()) p.variant = alias.variant;
      break;
    }
  }
  auto level = level_of(p.variant);
  if (level && p.variant.front() != 'v') p.variant = "v" + p.variant;
  if (p.architecture == "arm64" && level == 800) p.variant = "v8";  // "v8.0"
  return p;
}

namespace {

// The variant the image spec implies when none is written (amd64 v1, the baseline;
// arm64 v8; arm v7), so that linux/arm64 and linux/arm64/v8 match.
Platform with_default_variant(Platform p) {
  if (!p.variant.empty()) return p;
  if (p.architecture == "amd64") p.variant = "v1";
  if (p.architecture == "arm64") p.variant = "v8";
  if (p.architecture == "arm") p.variant = "v7";
  return p;
}

}  // namespace

Platform parse_platform(std::string_view text) {
  auto fail = [&](const std::string& why) -> Platform {
    throw FormatError("invalid platform " + quote(text) + ": " + why);
  };
  std::vector<std::string> parts;
  for (std::size_t start = 0; parts.size() <= 3;) {
    auto slash = text.find('/', start);
    parts.emplace_back(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  bool all_words = std::all_of(parts.begin(), parts.end(), [](const auto& s) { return is_platform_word(s); });
  if (parts.size() < 2 || parts.size() > 3 || !all_words)
    return fail("expected OS/ARCH[/VARIANT], e.g. linux/arm64/v8");
  Platform p{parts[0], parts[1], parts.size() == 3 ? parts[2] : ""};
  p = normalized(std::move(p));
  if (p.os != "linux") return fail("capsa runs only linux images");
  return p;
}

Platform platform_from_arch(std::string_view arch) {
  if (!is_platform_word(arch))
    throw FormatError("invalid architecture " + quote(arch) + ": expected a name such as amd64 or arm64");
  return normalized(Platform{"linux", std::string(arch), ""});
}

Platform host_platform() {
  utsname u{};
  if (uname(&u) != 0) throw_errno("uname");
  // The amd64 feature level of the CPU is not probed: indexes almost never split on it,
  // and v1 (the baseline) is what every amd64 CPU runs.
  return normalized(Platform{"linux", u.machine, ""});
}

std::optional<int> fitness(const Platform& offered_raw, const Platform& wanted_raw) {
  const Platform offered = with_default_variant(normalized(offered_raw));
  const Platform wanted = with_default_variant(normalized(wanted_raw));
  if (offered.os != wanted.os || offered.architecture != wanted.architecture) return std::nullopt;
  if (offered.variant == wanted.variant) return INT_MAX;
  if (has_ordered_variants(wanted.architecture)) {
    auto have = level_of(offered.variant), want = level_of(wanted.variant);
    if (have && want && *have <= *want) return 1 + *have;
    return std::nullopt;
  }
  if (wanted.variant.empty()) return 0;
  return std::nullopt;
}

}  // namespace capsa::oci
