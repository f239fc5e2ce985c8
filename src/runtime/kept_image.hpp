#pragma once
// Kept images: back-to-back containers of one image, started by one user with the same
// options (a workflow manager's thousands of short tasks), share one mount of the image
// instead of mounting it each time; the image's page cache stays warm between them too.
// The first container starts a hidden instance of the image (instance.hpp: its record is
// ".k-KEY" in the user's instance store, which `instance list` does not show), registers
// with it and joins it; later ones find it, register and join it. The instance ends
// when it has had no registered container for the linger time (instance_init.cpp), when
// its Slurm job step ends, or at `capsa cache clean`.
//
// Only containers that a shared root cannot change are kept: no writable layer of any
// kind, no --contain (its /tmp and home are the container's own), no --scratch, no
// private namespaces, no fakeroot, no capability, seccomp, CDI or --app options (an app
// is checked against the image where it is mounted), no cgroup limits (the container's
// own cgroup), no --fusemount, no --sharens (which has its own shared instance).
// Everything else
// that shapes the root (the image file itself, binds, home, working directory, GPU
// flags, the site's options, the launcher's environment) is part of the key: a
// container whose root would differ gets a kept image of its own.
#include <string>

#include "runtime/launch.hpp"

namespace capsa::runtime {

// Joins the kept image for `request` (starting it when there is none) and never returns.
// Returns, having changed nothing, when the request is not one to keep, keeping is off
// (a linger of 0), or no kept image could be started or joined: launch then carries on.
void join_or_keep_image(const ActionRequest& request);

// The linger in milliseconds: the site's `keep image seconds` (request.site), lowered,
// never raised, by CAPSA_KEEP_IMAGE_SECONDS.
int kept_image_linger_ms(const ActionRequest& request);

// Ends the caller's kept images (`capsa cache clean`) and returns how many there were.
int release_kept_images();

}  // namespace capsa::runtime
