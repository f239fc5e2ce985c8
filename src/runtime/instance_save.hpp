#pragma once
// `capsa instance save NAME FILE` (docs/instances.md): the root file system of a running
// instance, the image with whatever its container wrote to its writable layer
// (--writable-tmpfs, --overlay), and nothing that is mounted on it (binds, home, /proc),
// packed as the squashfs partition of a SIF at FILE, which capsa runs as any other image.
// The SPANK plugin's --container-save (docs/slurm-plugin.md) is this.
#include <string>

namespace capsa::runtime {

// FILE is written under a temporary name in its directory and renamed into place once
// complete (an existing FILE is replaced); on any failure nothing is left there. Throws
// Error with one line: no such instance, an instance an unprivileged caller cannot read
// whole (one without --fakeroot: the image's root-only files), an unwritable directory.
void save_instance(const std::string& name, const std::string& file);

}  // namespace capsa::runtime
