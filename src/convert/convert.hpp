#pragma once
// OCI image layers -> one squashfs image, streaming: each visible file's bytes go
// straight from the decompressed layer into libsquashfs's multithreaded block
// processor. No root filesystem is unpacked on disk, and memory holds only metadata
// (one node per visible path) plus a bounded number of blocks in flight.
//
// Layers are applied with the OCI image-spec rules (layer.md): whiteouts, opaque
// directories, unlink-and-recreate on type changes, directories merging. See
// docs/convert.md for what is kept, dropped and why.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace capsa::convert {

// Bytes [offset, offset + length) of a file: a blob stored inside an uncompressed tar
// (a `docker save` or OCI archive), read in place instead of extracted first.
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

struct LayerInput {
  std::string path;                      // the blob on disk: gzip, zstd or plain tar (sniffed)
  std::optional<std::string> diff_id;    // "sha256:<hex>" of the uncompressed tar, checked when set
  std::string display_name;              // names the layer in warnings and errors, e.g. its digest
  std::optional<ByteRange> range;        // only these bytes of `path` are the blob; the whole file otherwise
  // "sha256:<hex>" of the blob as stored (its manifest digest), checked when set: blobs
  // from a registry were checked as they downloaded, those from a local archive were not.
  std::optional<std::string> blob_digest;
};

// A synthetic entry placed above every layer (the /.singularity.d metadata of a
// pulled image): it wins over anything the layers hold at that path.
struct ExtraEntry {
  enum class Type { File, Directory, Symlink };
  std::string path;                // absolute or relative to the image root
  Type type = Type::File;
  mode_t mode = 0644;              // permission bits (type bits are implied by `type`)
  uid_t uid = 0;
  gid_t gid = 0;
  std::string content_or_target;   // file contents, or the symlink target; ignored for directories
  // Placed *below* every layer instead of above: it only appears where the layers have
  // nothing (bind points such as /tmp, whose mode 1777 in the image must win).
  bool only_if_missing = false;
};

// No lz4: images libsquashfs 1.2 writes with lz4 (gensquashfs's too) are rejected by
// squashfs-tools 4.5's unsquashfs ("failed to read id table block").
enum class Compressor { Zstd, Gzip, Xz };

// "zstd", "gzip" or "xz" (the --compression values); Error naming the choices otherwise.
Compressor compressor_named(const std::string& name);

// Default levels, measured on 920 MiB of Debian binaries and libraries (bench/convert.sh
// notes): libsquashfs's own zstd default, 15, is about 20 times slower than 3 for ~5%
// smaller images; gzip 9 (mksquashfs's default) is 1.75 times slower than 6 for 0.5%.
inline constexpr int kDefaultZstdLevel = 3;
inline constexpr int kDefaultGzipLevel = 6;

// Far above real images (the largest common ones unpack to tens of GiB), low enough that
// a decompression bomb stops after minutes of CPU, not hours. Zero runs cost no disk
// (libsquashfs stores all-zero blocks as sparse), so this bounds time, and the disk
// that compressible non-zero data takes.
inline constexpr std::uint64_t kDefaultMaxUnpackedBytes = 256ull << 30;

struct Progress {
  std::uint64_t input_bytes_done = 0;   // bytes of layer blobs (as stored) consumed so far
  std::uint64_t input_bytes_total = 0;  // sum of the blob sizes
};

struct ConvertOptions {
  // zstd by default (kernels >= 4.14 mount it): at level 3 it compresses about 25
  // times faster than gzip -9, mksquashfs's and Apptainer's setting, for images within
  // about 5% of the size, and it decompresses faster when the image is read. gzip is the choice for
  // images that very old kernels must mount.
  Compressor compressor = Compressor::Zstd;
  // Unset: kDefaultZstdLevel, kDefaultGzipLevel, or libsquashfs's default for xz (6).
  std::optional<int> level;
  std::uint32_t block_size = 128 * 1024;    // mksquashfs's default; power of two, 4 KiB..1 MiB
  unsigned workers = 0;  // compression threads; 0: the CPUs this process may use (affinity mask)
  // Every mtime later than this is clamped to it, and it becomes the image's own
  // time (reproducible builds). Unset: see source_date_epoch_from_environment().
  std::optional<std::int64_t> source_date_epoch;
  // Decompression bombs: the regular files of all layers, by the sizes their tar headers
  // declare (hidden ones too, since skipping their data still decompresses it; sparse
  // files by the data they store), may add up to at most this many bytes. Checked at
  // each header, before the file's data is decompressed. nullopt: no limit.
  std::optional<std::uint64_t> max_unpacked_bytes = kDefaultMaxUnpackedBytes;
  // Called from the converting thread about every MiB of input. It may throw to cancel
  // (Ctrl-C): the exception propagates and nothing is left at the output path.
  std::function<void(const Progress&)> progress;
};

struct ConversionResult {
  std::string output_path;
  std::uint64_t inode_count = 0;   // inodes in the image, root included
  std::uint64_t file_count = 0;    // regular-file inodes
  std::uint64_t output_bytes = 0;  // size of the squashfs image
  std::vector<std::string> warnings;  // one line each: skipped devices, hostile paths, dropped xattrs...
  std::vector<std::string> diff_ids;  // "sha256:<hex>" of each layer's uncompressed tar, in input order
};

// SOURCE_DATE_EPOCH from the environment when it is a valid integer, else nullopt.
std::optional<std::int64_t> source_date_epoch_from_environment();

// CAPSA_MAX_UNPACKED_SIZE: a size in bytes with an optional K, M, G or T suffix (powers
// of 1024), or 0 for no limit. Unset or empty: kDefaultMaxUnpackedBytes. Throws Error
// when it is set to anything else.
std::optional<std::uint64_t> max_unpacked_bytes_from_environment();

// Writes the squashfs image of `layers` (base first, as in a manifest) with `extras`
// on top to `output_path`, through a temporary file renamed into place: on any
// failure nothing is left at `output_path`. A layer given twice is applied twice.
// Throws FormatError naming the layer when one is unreadable, truncated, not a tar,
// or does not match its diff_id or blob_digest; SystemError for I/O failures. Hostile entries (paths
// escaping the root, devices, ...) are skipped with a warning, never followed.
ConversionResult layers_to_squashfs(const std::vector<LayerInput>& layers, const std::vector<ExtraEntry>& extras,
                                    const std::string& output_path, const ConvertOptions& options = {});

// The same image written into the open `fd` from byte `offset` on (a SIF's partition,
// so the image is written once and never copied): bytes from offset to offset +
// output_bytes. `label` names the output in errors; output_path stays empty. On
// failure, bytes past `offset` are garbage that the caller discards with the file.
ConversionResult layers_to_squashfs(const std::vector<LayerInput>& layers, const std::vector<ExtraEntry>& extras,
                                    int fd, std::uint64_t offset, const std::string& label,
                                    const ConvertOptions& options = {});

}  // namespace capsa::convert
