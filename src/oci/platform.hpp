#pragma once
// Platforms ("linux/arm64/v8") as registries name them, the host's, and how they match.
// Source: OCI image-spec image-index.md (platform object).

#include <optional>
#include <string>
#include <string_view>

namespace capsa::oci {

struct Platform {
  std::string os;
  std::string architecture;
  std::string variant;  // empty when none was given

  // "os/arch[/variant]", as given (not normalised): what an index offers, for messages.
  std::string to_string() const;
  friend bool operator==(const Platform&, const Platform&) = default;
};

// One spelling per platform: lower case, uname and Debian names mapped to registry ones
// (x86_64 -> amd64, aarch64 -> arm64/v8, armhf -> arm/v7, armel -> arm/v6, i386 -> 386),
// numeric variants written "vN" (arm/7 -> arm/v7). Variants left out stay out; fitness()
// treats them as the image spec implies (amd64 v1, arm64 v8, arm v7) because producers
// are inconsistent about writing them (distroless #1382).
Platform normalized(Platform p);

// `--platform OS/ARCH[/VARIANT]`. Only linux: capsa runs Linux containers.
// Throws FormatError `invalid platform "<text>": <why>`.
Platform parse_platform(std::string_view text);
// `--arch ARCH` (amd64, arm64, aarch64, armhf, ppc64le, ...): linux/ARCH, normalised.
Platform platform_from_arch(std::string_view arch);
// The machine capsa runs on, from uname(2), normalised.
Platform host_platform();

// How well an image built for `offered` runs on `wanted` (both normalised by the
// function): nullopt when it cannot; otherwise a rank, the exact match highest, then
// lower feature levels of the same family (amd64 v2 image on a v3 request), the higher
// the better; any variant ranks lowest when `wanted` names none.
std::optional<int> fitness(const Platform& offered, const Platform& wanted);

}  // namespace capsa::oci
