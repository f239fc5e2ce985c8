#pragma once
// `capsa pull docker://REF`: reference -> manifest -> blobs (cache) -> layers -> squashfs
// -> SIF (cache) -> output file. Each stage is one call into its own domain; this file
// only orders them and owns the cache entries and temporaries in between.
// (`library://REF`: library_pull.hpp.)
// `capsa pull oras://REF`: reference -> manifest (one SIF layer) -> the SIF blob (cache,
// keyed by its digest) -> output file.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/convert.hpp"
#include "oci/platform.hpp"
#include "reference/image_reference.hpp"
#include "registry/credentials.hpp"
#include "util/progress.hpp"

namespace capsa::pull {

// How to reach and log in to the registry: --nohttps, --docker-login,
// --docker-username/--docker-password, --authfile. Build and exec docker:// pass theirs on.
struct RegistryAccess {
  bool nohttps = false;                              // plain HTTP to the registry
  bool docker_login = false;                         // prompt for credentials on the terminal
  std::optional<registry::Credentials> credentials;  // given on the command line: these, nothing else
  std::optional<std::string> authfile;               // a config.json searched before the usual ones
};

struct PullOptions {
  std::string reference;                    // "docker://..." or "oras://..." as the user wrote it
  std::optional<std::string> output;        // OUTPUT.sif; Apptainer's default name otherwise
  std::optional<std::string> output_dir;    // --dir: where the output goes
  bool force = false;                       // overwrite an existing output
  bool disable_cache = false;               // keep nothing: a private cache, removed at the end
  std::optional<std::string> tmpdir;        // where that private cache goes ($TMPDIR, else /var/tmp)
  RegistryAccess registry;
  std::optional<oci::Platform> platform;    // --platform / --arch; the host's otherwise
  convert::Compressor compressor = convert::Compressor::Zstd;
  std::optional<std::string> cache_dir;     // overrides the environment (tests)
  std::optional<std::string> library;       // --library URL, for library:// references
  // --no-cleanup: the private directory of a --disable-cache pull (its layers, config and
  // conversion) is kept and its path printed; a cached pull's layers stay in the cache.
  bool no_cleanup = false;
};

// The private cache of a --disable-cache pull, removed at the end unless `keep`
// (--no-cleanup), which says where it stays.
void remove_private_cache_root(const std::string& root, bool keep);

struct PullResult {
  std::string output_path;
  std::string manifest_digest;   // what the tag resolved to
  bool from_cache = false;       // the SIF was already cached: nothing downloaded or converted
  std::vector<std::string> warnings;
};

// "oras://…": a SIF stored as an ORAS artifact (oci/sif_artifact.hpp).
bool is_oras_reference(std::string_view reference);

// The credentials to use for `ref`'s registry: the terminal (--docker-login), the command
// line, --authfile, then the environment and the config files (registry/credentials.hpp).
std::optional<registry::Credentials> credentials_for(const RegistryAccess& access,
                                                     const reference::ImageReference& ref);

// Where pull() writes: OUTPUT, else Apptainer's default name (NAME_TAG.sif), in --dir.
std::string output_path(const PullOptions& options);

// Pulls and writes the SIF at the output path (atomically; never a partial file).
PullResult pull(const PullOptions& options, Progress& progress);

// The cached SIF of an image, pulled and converted first if needed (for `exec docker://`).
// Returns its path in the cache.
std::string cached_sif(const PullOptions& options, Progress& progress);

// The same, done in a child process: downloads and conversion use threads, and a
// process that is about to unshare(CLONE_NEWUSER) must never have had more than one.
// Errors are printed by the child; this throws a short Error naming the image.
std::string cached_sif_in_subprocess(const PullOptions& options, Progress::Mode progress_mode);

// pull() (to options.output) done in a child process, for the same reason and with the
// same errors.
void pull_in_subprocess(const PullOptions& options, Progress::Mode progress_mode);

}  // namespace capsa::pull
