#pragma once
// Debian's gocryptfs, as Apptainer runs it for its unprivileged encrypted images
// (FsType 6, "Gocryptfs squashfs": internal/pkg/image/packer/gocryptfs.go): a gocryptfs
// directory made with -init -deterministic-names -plaintextnames holds the image's
// squashfs as one encrypted file named "squashfs-*" beside gocryptfs.conf, and the
// partition is the squashfs of that directory. gocryptfs is used, not re-implemented:
// its file format (AES-256-GCM blocks, scrypt-wrapped master key) is its own, and the
// program is packaged. The secret reaches it through a pipe on its standard input,
// never argv or its environment; its messages are kept from the caller's terminal.
//
// Its mounts are made in a mount namespace of their own (with a user namespace when
// not root), in a helper process: nothing is ever mounted where the caller or anyone
// else can see it, and the mounts go away with the helper, however it ends.
#include <functional>
#include <string>

#include "util/fd.hpp"
#include "util/process.hpp"

namespace capsa::encryption {

// The gocryptfs program (PATH, then /usr/bin and /usr/sbin); throws Error naming the
// package when it is missing.
std::string gocryptfs_program();

// In a child that is about to mount: unshares the mount namespace (and a user namespace,
// the caller mapped to root, when not root) and makes every mount in it private.
// Returns false (errno set) when the kernel refuses.
bool enter_private_mount_namespace();

// Starts `gocryptfs -fg` serving `cipher_dir` at `plain_dir` (read-only when asked) and
// returns once it is mounted. Throws Error: "wrong passphrase" when gocryptfs says so,
// else its own message. The caller stops the process (SIGTERM) to unmount.
Process mount_gocryptfs(const std::string& cipher_dir, const std::string& plain_dir, const std::string& secret,
                        bool read_only, const std::string& image);

// The build's step (in a helper process, see above): makes `cipher_dir` (empty, on the
// disk) a gocryptfs directory for `secret` and writes `plain_file`'s bytes into it,
// encrypted, as `name`. Throws Error with gocryptfs' own message on failure.
void encrypt_into_directory(const std::string& plain_file, const std::string& cipher_dir, const std::string& name,
                            const std::string& secret);

// Runs `body` in a child in a private mount namespace (enter_private_mount_namespace)
// and waits for it; what it throws is thrown here as Error with the same one line.
void run_in_private_namespace(const std::string& what, const std::function<void()>& body);

inline constexpr int kWrongSecretStatus = 12;  // gocryptfs' exit status for "Password incorrect"

}  // namespace capsa::encryption
