#pragma once
// A squashfs image (bare, or the primary partition of a SIF) -> a new directory tree:
// SIF -> sandbox. Safe against hostile images: every entry is created relative to its
// parent's directory fd (openat/mkdirat/symlinkat/linkat with O_NOFOLLOW), names must be
// single path components, and no symlink of the image is ever followed, so nothing is
// written outside `directory`.
// Kept: types, permission bits with setuid/setgid/sticky, hard links, symlinks, fifos,
// sockets, mtimes (atime = mtime); owners when allowed (below). Device nodes are skipped
// with a warning on stderr when they cannot be created (unprivileged callers). Extended
// attributes are not restored.

#include <string>

namespace capsa::squashfs {

struct UnpackOptions {
  // true: chown every entry to its recorded uid/gid. A caller that may not (an
  // unprivileged user, or a user namespace where the id is unmapped) keeps the entry
  // owned by itself, silently: that is the expected case for plain unprivileged unpacks.
  // Run the unpack inside runtime::run_in_user_namespace(fakeroot_subid, ...) to keep
  // owners as subordinate ids. false: never chown.
  bool keep_ownership = true;
};

// `image_path` is a SIF file (its primary system partition is unpacked) or a bare
// squashfs image. `directory` must not exist, or be an empty directory; it is created
// with the image root's mode. On failure the partial tree is left for the caller to
// remove (a build unpacks into its own temporary directory). Throws FormatError for an
// unreadable or hostile image (names with '/', "." or "..", duplicate names), SystemError
// for I/O failures.
void unpack_to_directory(const std::string& image_path, const std::string& directory,
                         const UnpackOptions& options = {});

}  // namespace capsa::squashfs
