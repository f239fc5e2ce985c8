#pragma once
// Writing files inside a build's sandbox from a child that is the build's root, chrooted
// into it, so that a symlink in the image can never redirect a write onto the host
// (stage_metadata, stage_apps).

#include <sys/types.h>

#include <functional>
#include <string>

#include "runtime/sandbox_run.hpp"

namespace capsa::build {

// Runs `body` in a child that is the build's root, chrooted into rootfs, umask 022.
void in_chroot(runtime::RootMode mode, const std::string& rootfs, const std::string& what,
               const std::function<void()>& body);

// Inside in_chroot: replaces whatever is at `path` (a symlink is replaced, never followed)
// with a file of exactly `mode`.
void write_text(const std::string& path, const std::string& content, mode_t mode);
// Inside in_chroot: creates the directory (an existing one is kept) and gives it `mode`.
void make_directory(const std::string& path, mode_t mode);
// `mkdir -p` with `mode` for each directory it creates.
void make_directories(const std::string& path, mode_t mode);
// A file that is missing reads as empty.
std::string read_text(const std::string& path);

}  // namespace capsa::build
