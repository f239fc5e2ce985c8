#pragma once
// The administrator's configuration applied to one run. What it forbids is refused before
// any image is mounted, in one line naming the directive and its file; what it sets (the
// default binds, the system mounts it turns off, /dev, the session tmpfs, the loop device
// limit) goes into the request. docs/administration.md.
#include <optional>
#include <string>

#include "config/site_config.hpp"
#include "runtime/launch.hpp"
#include "util/file_identity.hpp"

namespace capsa::runtime {

// `r` holds what the user asked for (flags and environment). Throws capsa::Error for a
// flag the configuration refuses (user bind control: -B, --mount, -H, -S, -W,
// --containlibs, --cdi-dirs; enable overlay, enable fusemount, allow container ... for
// --overlay images).
void apply_site_config(const config::SiteConfig& site, ActionRequest& r);

// `allow container sif|dir|squashfs|extfs` and `limit container paths|owners|groups`
// for the image to run (after any pull: a docker:// image runs as a SIF in the cache).
// Apptainer does not apply them to root, nor does capsa. For instance://NAME, the image
// the caller's running instance recorded. Throws capsa::Error.
// The checks read one open file; its identity is returned where the site restricts
// images at all, so that the launch runs that file or nothing (ActionRequest's
// image_checked); nullopt where nothing was restricted, and for instance://.
std::optional<FileIdentity> check_site_image(const config::SiteConfig& site, const std::string& image);

}  // namespace capsa::runtime
