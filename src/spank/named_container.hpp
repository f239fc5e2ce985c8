#pragma once
// A named container (--container-name NAME) keeps its files for the rest of the job on
// each node: a persistent overlay directory, which later steps of the job mount again
// (writable with --container-writable), and the image it was made from, so that a later
// step may omit --container-image. They live in a directory private to the user,
//   USERDIR/HOST/JOB/NAME/        the overlay (upper/, work/)
//   USERDIR/HOST/JOB/NAME.image   the image reference
// which the job epilog removes. HOST keeps two nodes that share STATEDIR apart. USERDIR
// is STATEDIR/capsa-spank-UID, made by the user (never by root) when missing; that name
// is predictable in a shared STATEDIR (/tmp), so when another user made it first the
// user's own STATEDIR/capsa-spank-UID.XXXXXX serves instead (user_state_dir, util/own_directory.hpp).
#include <sys/types.h>

#include <string>

namespace capsa::spank {

struct NamedPaths {
  std::string user_dir;  // user_state_dir()
  std::string host_dir;
  std::string job_dir;
  std::string overlay_dir;
  std::string image_file;
};

// The user's directory in `state_dir`: capsa-spank-UID when it is a directory of `uid`'s
// (made, 0700, when missing and `make`), else the first (by name) of the user's own
// capsa-spank-UID.XXXXXX there, else a new one (mkdtemp) when `make`, else "". Run with
// the user's effective ids when `make`: what it makes is the user's.
std::string user_state_dir(const std::string& state_dir, uid_t uid, bool make);

std::string named_job_dir(const std::string& user_dir, const std::string& host, const std::string& job);
NamedPaths named_container_paths(const std::string& user_dir, const std::string& host, const std::string& job,
                                 const std::string& name);

// Makes the directories (mode 0700; each must be a real directory owned by `uid`, or
// this throws: a directory someone else made in a shared STATEDIR is never used) and
// returns the image to start: `image`, recorded for later steps, or the recorded one when
// `image` is empty. Throws std::runtime_error with one line when there is none, or when
// `image` differs from the recorded one. Runs with the user's effective ids.
std::string prepare_named_container(const NamedPaths& paths, uid_t uid, const std::string& image);

}  // namespace capsa::spank
