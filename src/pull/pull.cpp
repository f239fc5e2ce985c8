#include "pull/pull.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "archive/local_image.hpp"
#include "archive/source.hpp"
#include "cache/cache.hpp"
#include "capsa/version.hpp"
#include "image/container_files.hpp"
#include "image/pulled_sif.hpp"
#include "library/reference.hpp"
#include "oci/image_config.hpp"
#include "oci/manifest.hpp"
#include "oci/select.hpp"
#include "oci/sif_artifact.hpp"
#include "pull/library_pull.hpp"
#include "pull/net_pull.hpp"
#include "reference/image_reference.hpp"
#include "registry/client.hpp"
#include "registry/credentials.hpp"
#include "registry/options.hpp"
#include "sif/image.hpp"
#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"
#include "util/process.hpp"

namespace capsa::pull {
namespace {

// Everything one pull works with, built once from the options.
struct Session {
  reference::ImageReference ref;
  bool oras = false;  // an oras:// SIF artifact, not a docker:// image
  std::optional<archive::LocalSource> local;  // docker-archive:, oci-archive:, oci: (no registry)
  std::optional<std::string> url;             // http(s)://: a SIF on a web server
  oci::Platform platform;
  std::unique_ptr<registry::RegistryClient> client;
  std::unique_ptr<cache::Cache> cache;
  std::optional<std::string> private_cache_root;  // --disable-cache: removed at the end
  bool keep_private_cache_root = false;           // --no-cleanup
  Progress* progress = nullptr;
  std::vector<std::string> warnings;

  ~Session() {
    if (private_cache_root) remove_private_cache_root(*private_cache_root, keep_private_cache_root);
  }
  void warn(const std::string& line) {
    warnings.push_back(line);
    log::warning(line);
  }
  std::string image_name() const {
    if (local) return local->written;
    if (url) return *url;
    return (oras ? "oras://" : "docker://") + ref.to_string();
  }
};

constexpr std::string_view kOrasScheme = "oras://";

std::string short_digest(const std::string& digest) {
  auto colon = digest.find(':');
  return colon == std::string::npos ? digest : digest.substr(colon + 1, 12);
}

void open_registry(Session& s, const PullOptions& options);
void open_cache(Session& s, const PullOptions& options);

std::unique_ptr<Session> open_session(const PullOptions& options, Progress& progress) {
  auto session = std::make_unique<Session>();
  session->progress = &progress;
  session->platform = options.platform ? *options.platform : oci::host_platform();
  if (archive::is_local_source(options.reference)) {
    session->local = archive::parse_local_source(options.reference);
  } else if (is_http_reference(options.reference)) {
    session->url = options.reference;
  } else {
    session->oras = is_oras_reference(options.reference);
    session->ref = reference::parse_image_reference(session->oras ? options.reference.substr(kOrasScheme.size())
                                                                  : options.reference);
    open_registry(*session, options);
  }
  open_cache(*session, options);
  return session;
}

void open_registry(Session& s, const PullOptions& options) {
  registry::ClientOptions client_options = registry::options_from_environment();
  client_options.insecure_http = client_options.insecure_http || options.registry.nohttps;
  client_options.log = [session = &s](std::string_view line) { session->progress->note(std::string(line)); };
  s.client = std::make_unique<registry::RegistryClient>(s.ref.api_host(), client_options,
                                                        credentials_for(options.registry, s.ref));
}

void open_cache(Session& s, const PullOptions& options) {
  auto* session = &s;
  if (options.disable_cache) {
    session->private_cache_root = make_private_cache_root(options.tmpdir);
    session->keep_private_cache_root = options.no_cleanup;
    session->cache = std::make_unique<cache::Cache>(*session->private_cache_root);
  } else if (options.cache_dir) {
    session->cache = std::make_unique<cache::Cache>(*options.cache_dir);
  } else {
    session->cache = std::make_unique<cache::Cache>(cache::Cache::open_default());
  }
  // A pull killed with SIGKILL (which no handler sees) leaves its scratch files in tmp/,
  // possibly a whole squashfs; take them back before making new ones.
  if (!options.disable_cache) {
    try {
      session->cache->sweep_temporaries();
    } catch (const Error& e) {
      log::warning(std::string("could not remove stale temporaries: ") + e.what());
    }
  }
}

// The image manifest for the wanted platform, following indexes (which may nest).
oci::Manifest resolve_manifest(Session& s, const std::string& top_digest) {
  const std::string image = "docker://" + s.ref.to_string();
  std::string digest = top_digest;
  for (int depth = 0; depth < 4; ++depth) {
    registry::ManifestResponse response = s.client->get_manifest(s.ref.repository, digest);
    if (oci::kind_of(response.media_type, response.bytes) == oci::ManifestKind::Manifest)
      return oci::parse_manifest(response.bytes, response.media_type);
    oci::Index index = oci::parse_index(response.bytes, response.media_type);
    digest = oci::select_manifest(index, s.platform, image).digest.to_string();
  }
  throw FormatError(image + ": indexes nested more than 4 deep");
}

// Every blob in `descriptors` present in the cache, downloading the missing ones in
// parallel. Producer locks are taken in digest order, so two pulls sharing layers
// cannot deadlock; a blob another process is downloading is waited for.
std::map<std::string, std::string> ensure_blobs(Session& s, const std::vector<oci::Descriptor>& descriptors) {
  std::map<std::string, const oci::Descriptor*> unique;
  for (const auto& d : descriptors) unique.emplace(d.digest.to_string(), &d);

  std::map<std::string, std::string> paths;
  std::vector<cache::ProducerLock> locks;
  std::vector<registry::BlobTarget> targets;
  std::vector<std::string> labels;
  for (const auto& entry : unique) {
    const std::string& digest = entry.first;
    const oci::Descriptor* descriptor = entry.second;
    cache::Key key = cache::Key::blob(digest);
    auto on_wait = [&](const cache::Key&, const std::string& holder) {
      s.progress->note("waiting for " + (holder.empty() ? std::string("another process") : holder) +
                       " to finish downloading " + digest);
    };
    auto lock = s.cache->begin_produce(key, {.timeout = std::nullopt, .on_wait = on_wait});
    paths[digest] = s.cache->path_of(key);
    if (!lock) continue;  // already cached (perhaps by the process we waited for)
    targets.push_back({digest, static_cast<std::uint64_t>(descriptor->size), lock->partial_path()});
    labels.push_back("blob " + short_digest(digest));
    locks.push_back(std::move(*lock));
  }
  if (targets.empty()) return paths;

  for (std::size_t i = 0; i < targets.size(); ++i) s.progress->start(labels[i], targets[i].size.value_or(0));
  try {
    s.client->fetch_blobs(
        s.ref.repository, targets,
        [&](std::size_t index, std::uint64_t done, std::optional<std::uint64_t>) { s.progress->update(labels[index], done); },
        &interrupt_flag());
  } catch (const Error&) {
    throw_if_interrupted();  // the transfers were cancelled by a signal, not by a fault
    throw;
  }
  throw_if_interrupted();
  for (std::size_t i = 0; i < targets.size(); ++i) {
    s.progress->finish(labels[i]);
    locks[i].publish();
  }
  return paths;
}

void convert_to_sif(Session& s, const oci::ImageConfig& config, const std::vector<convert::LayerInput>& layers,
                    const std::string& bootstrap, const std::string& from, const std::string& sif_path,
                    const PullOptions& options);

// Downloads what is missing and converts the image into a SIF at `sif_path`.
void produce_sif(Session& s, const std::string& top_digest, const std::string& sif_path, const PullOptions& options) {
  oci::Manifest manifest = resolve_manifest(s, top_digest);
  std::vector<oci::Descriptor> wanted = manifest.layers;
  wanted.push_back(manifest.config);
  std::map<std::string, std::string> blobs = ensure_blobs(s, wanted);

  // The blob was verified against its digest when it was downloaded into the cache.
  oci::ImageConfig config = oci::parse_image_config(read_whole_file(blobs.at(manifest.config.digest.to_string())));
  oci::check_layers_match(manifest, config);
  if (auto warning = oci::platform_mismatch_warning(config, s.platform)) s.warn(*warning);

  std::vector<convert::LayerInput> layers;
  for (std::size_t i = 0; i < manifest.layers.size(); ++i) {
    const auto& layer = manifest.layers[i];
    convert::LayerInput input;
    input.path = blobs.at(layer.digest.to_string());
    input.diff_id = config.diff_ids[i].to_string();
    input.display_name = layer.digest.to_string();  // the converter adds "layer N/M (...)"
    layers.push_back(std::move(input));
  }
  convert_to_sif(s, config, layers, "docker", s.ref.written, sif_path, options);
}

// The SIF of an image whose config and layers are at hand (downloaded, or in a local
// archive), written at `sif_path`; `bootstrap` and `from` are the headers of the
// definition file it records, as Apptainer's (docker and busybox:1.36, docker-archive and
// img.tar, ...).
void convert_to_sif(Session& s, const oci::ImageConfig& config, const std::vector<convert::LayerInput>& layers,
                    const std::string& bootstrap, const std::string& from, const std::string& sif_path,
                    const PullOptions& options) {
  std::uint64_t total = 0;
  for (const auto& layer : layers) {
    if (layer.range) {
      total += layer.range->length;
    } else {
      struct stat st {};
      if (::stat(layer.path.c_str(), &st) == 0) total += static_cast<std::uint64_t>(st.st_size);
    }
  }

  image::OciSource source;
  source.config = config.config;
  source.reference = from;
  source.bootstrap = bootstrap;
  source.architecture = config.architecture.empty() ? s.platform.architecture : config.architecture;
  source.build_time = convert::source_date_epoch_from_environment().value_or(static_cast<std::int64_t>(::time(nullptr)));
  source.capsa_version = build_info::version;

  std::vector<convert::ExtraEntry> extras;
  for (const image::ContainerFile& file : image::container_files_for_oci(source)) {
    convert::ExtraEntry entry;
    entry.path = file.path;
    entry.type = file.kind == image::ContainerFile::Kind::Directory ? convert::ExtraEntry::Type::Directory
                 : file.kind == image::ContainerFile::Kind::Symlink ? convert::ExtraEntry::Type::Symlink
                                                                     : convert::ExtraEntry::Type::File;
    entry.mode = static_cast<mode_t>(file.mode);
    entry.content_or_target = file.content;
    entry.only_if_missing = file.only_if_missing;
    extras.push_back(std::move(entry));
  }

  // A scratch directory, not a scratch file: the SIF writer writes through a temporary
  // name, which must lie under the item's lock, or a concurrent sweep_temporaries() would
  // take it for garbage; and a SIGKILL leaves it where the next sweep removes it.
  cache::TempItem scratch = s.cache->make_temp(".convert");
  if (::mkdir(scratch.path().c_str(), 0700) != 0) throw_errno("creating " + scratch.path());
  const std::string scratch_sif = scratch.path() + "/image.sif";
  convert::ConvertOptions convert_options;
  convert_options.compressor = options.compressor;
  convert_options.max_unpacked_bytes = convert::max_unpacked_bytes_from_environment();
  const std::string task = "converting to squashfs";
  convert_options.progress = [&](const convert::Progress& p) {
    throw_if_interrupted();  // unwinding removes the unfinished SIF
    s.progress->update(task, p.input_bytes_done);
  };
  bool reproducible = convert::source_date_epoch_from_environment().has_value();
  // The squashfs goes straight into the SIF: peak temporary disk is the layers plus one
  // image, not two (issue 3 item 10).
  image::write_pulled_sif_in_place(scratch_sif, source, reproducible, [&](int fd, std::uint64_t offset) {
    s.progress->start(task, total);
    convert::ConversionResult converted =
        convert::layers_to_squashfs(layers, extras, fd, offset, scratch_sif + " (squashfs partition)", convert_options);
    s.progress->finish(task);
    for (const auto& warning : converted.warnings) s.warn(warning);
    return converted.output_bytes;
  });
  throw_if_interrupted();  // before the cache publishes the entry
  if (::rename(scratch_sif.c_str(), sif_path.c_str()) != 0) throw_errno("renaming " + scratch_sif + " to " + sif_path);
}

std::string output_path_for(const PullOptions& options, const std::string& default_name) {
  std::string name = options.output ? *options.output : default_name;
  return options.output_dir ? *options.output_dir + "/" + name : name;
}

std::string default_name_of(const Session& s, const PullOptions& options) {
  if (s.url) return http_default_name(*s.url);
  return s.local ? archive::default_sif_name(options.reference) : s.ref.default_sif_name();
}

}  // namespace

std::string make_private_cache_root(const std::optional<std::string>& tmpdir) {
  const char* tmp = std::getenv("TMPDIR");
  std::string parent = tmpdir ? *tmpdir : tmp && *tmp ? tmp : "/var/tmp";
  std::string tmpl = parent + "/capsa-pull-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw_errno("creating a temporary directory for --disable-cache");
  return buf.data();
}

void remove_private_cache_root(const std::string& root, bool keep) {
  if (keep) {
    log::info("Pull performed with no clean up option, temporary directory kept at: " + root);
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

bool is_oras_reference(std::string_view reference) { return reference.starts_with(kOrasScheme); }

std::optional<registry::Credentials> credentials_for(const RegistryAccess& access,
                                                     const reference::ImageReference& ref) {
  const std::string host = ref.api_host();
  std::optional<registry::Credentials> credentials;
  if (access.docker_login)
    credentials = registry::prompt_for_credentials_on_tty(ref.registry);
  else if (access.credentials)
    credentials = access.credentials;
  else if (access.authfile)
    credentials = registry::credentials_from_docker_config(*access.authfile, host);
  if (!credentials) credentials = registry::find_credentials(host);
  return credentials;
}

std::string output_path(const PullOptions& options) {
  if (library::is_library_reference(options.reference)) return library_output_path(options);
  if (archive::is_local_source(options.reference))
    return output_path_for(options, archive::default_sif_name(options.reference));
  if (is_http_reference(options.reference)) return output_path_for(options, http_default_name(options.reference));
  const std::string_view bare = is_oras_reference(options.reference)
                                    ? std::string_view(options.reference).substr(kOrasScheme.size())
                                    : options.reference;
  return output_path_for(options, reference::parse_image_reference(bare).default_sif_name());
}

namespace {

void refuse_existing(const std::string& output, bool force) {
  struct stat st {};
  if (!force && ::lstat(output.c_str(), &st) == 0)
    throw Error("image file already exists: " + output + " - will not overwrite (use --force)");
}

// The cache key of the SIF converted from `digest` for `platform`: a SIF of another
// compression than the default zstd (exec and run take the zstd one) is an entry of its
// own, named by the digest of the two (the cache's names stay DIGEST-OS-ARCH).
cache::Key converted_sif_key(const std::string& digest, const oci::Platform& p, convert::Compressor compressor) {
  const std::string keyed =
      compressor == convert::Compressor::Zstd
          ? digest
          : oci::Digest::sha256_of(digest + "\ncompression " + std::to_string(static_cast<int>(compressor)))
                .to_string();
  return cache::Key::sif(keyed, p.os, p.architecture, p.variant);
}

// Runs `produce` for a cache entry; when it fails, the half-written entry goes first (a
// SIF cannot be resumed, unlike a blob).
void discarding_on_failure(cache::ProducerLock& lock, const std::function<void()>& produce) {
  try {
    produce();
  } catch (...) {
    try {
      lock.discard_partial();
    } catch (const Error&) {
      // the next producer truncates it anyway; the original failure is what matters
    }
    throw;
  }
}

// Waits as long as another process produces the entry, saying once what it waits for.
cache::WaitOptions waiting_for(Session& s, const std::string& work) {
  return {.timeout = std::nullopt, .on_wait = [&s, work](const cache::Key&, const std::string& holder) {
            s.progress->note("waiting for " + (holder.empty() ? std::string("another process") : holder) +
                             " to finish " + work);
          }};
}

// The cache entry of an oras:// image: its one layer, the SIF itself, keyed by its digest
// (as Apptainer's oras cache is), downloaded (resumably, verified) unless cached.
cache::EntryUse oras_entry(Session& s, std::string& manifest_digest, bool& from_cache) {
  const std::string image = s.image_name();
  registry::ManifestResponse response = s.client->get_manifest(s.ref.repository, s.ref.manifest_reference());
  if (oci::kind_of(response.media_type, response.bytes) == oci::ManifestKind::Index) {
    const oci::Index index = oci::parse_index(response.bytes, response.media_type);
    response =
        s.client->get_manifest(s.ref.repository, oci::select_manifest(index, s.platform, image).digest.to_string());
  }
  manifest_digest = response.digest;
  const oci::SifLayer layer = oci::parse_sif_manifest(response.bytes, "its manifest");
  const std::string label = "SIF " + short_digest(layer.digest);
  from_cache = true;
  return s.cache->wait_or_produce(
      cache::Key::blob(layer.digest),
      [&](cache::ProducerLock& lock) {
        from_cache = false;
        s.progress->start(label, layer.size);
        try {
          s.client->fetch_blob(
              s.ref.repository, {layer.digest, layer.size, lock.partial_path()},
              [&](std::uint64_t done, std::optional<std::uint64_t>) { s.progress->update(label, done); },
              &interrupt_flag());
        } catch (const Error&) {
          throw_if_interrupted();  // the partial download stays for the next run to resume
          throw;
        }
        throw_if_interrupted();
        s.progress->finish(label);
        if (!sif::looks_like_sif(lock.partial_path())) {
          lock.discard_partial();
          throw FormatError("its layer " + layer.digest + " is not a SIF file");
        }
      },
      waiting_for(s, "downloading " + image));
}

// The cache entry of a docker-archive:, oci-archive: or oci: image, keyed as a docker://
// one is, by what the reference resolved to (here: the manifest digest, or a docker
// archive's config digest) and the platform; converted in place from the archive.
cache::EntryUse local_entry(Session& s, const PullOptions& options, std::string& content_digest, bool& from_cache) {
  // A compressed archive is decompressed into the cache's tmp/, where a killed run's
  // leftovers are swept; it lives until the conversion is done.
  std::optional<cache::TempItem> scratch;
  const archive::LocalImage image = archive::open_local_image(*s.local, s.platform, [&] {
    scratch.emplace(s.cache->make_temp(".archive"));
    if (::mkdir(scratch->path().c_str(), 0700) != 0) throw_errno("creating " + scratch->path());
    return scratch->path();
  });
  content_digest = image.content_digest;
  const oci::Platform p = oci::normalized(s.platform);
  from_cache = true;
  return s.cache->wait_or_produce(
      converted_sif_key(image.content_digest, p, options.compressor),
      [&](cache::ProducerLock& lock) {
        from_cache = false;
        if (auto warning = oci::platform_mismatch_warning(image.config, s.platform)) s.warn(*warning);
        discarding_on_failure(lock, [&] {
          convert_to_sif(s, image.config, image.layers, archive::scheme_of(s.local->kind),
                         s.local->written.substr(s.local->written.find(':') + 1), lock.partial_path(), options);
        });
      },
      waiting_for(s, "converting " + s.local->written));
}

// The cache entry of an http(s):// SIF, keyed as Apptainer's net cache is: by the URL and
// the server's Last-Modified (or ETag); without either, by the time, so a server that
// says nothing about its file's age is asked again each time.
cache::EntryUse net_entry(Session& s, bool& from_cache) {
  std::string validator = http_validator(*s.url);
  if (validator.empty()) validator = std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  const oci::Platform p = oci::normalized(oci::host_platform());
  from_cache = true;
  return s.cache->wait_or_produce(
      cache::Key::sif(oci::Digest::sha256_of(*s.url + "\n" + validator).to_string(), p.os, p.architecture, p.variant),
      [&](cache::ProducerLock& lock) {
        from_cache = false;
        discarding_on_failure(lock, [&] {
          UniqueFd out(::open(lock.partial_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
          if (!out) throw_errno("creating " + lock.partial_path());
          download_sif(*s.url, out.get(), lock.partial_path(), *s.progress);
        });
      },
      waiting_for(s, "downloading " + *s.url));
}

// --disable-cache: straight to the output, through a temporary name in its directory.
void download_to_output(Session& s, const std::string& output, bool force) {
  mode_t mask = ::umask(0);
  ::umask(mask);
  AtomicFile file(output, 0755 & ~mask, AtomicFile::Temporary::named);
  download_sif(*s.url, file.fd(), file.temp_path(), *s.progress);
  file.commit(force);
}

// The cache entry of the SIF, produced here unless cached or being produced elsewhere.
cache::EntryUse sif_entry(Session& s, const PullOptions& options, std::string& top_digest, bool& from_cache) {
  if (s.oras) return oras_entry(s, top_digest, from_cache);
  if (s.local) return local_entry(s, options, top_digest, from_cache);
  if (s.url) return net_entry(s, from_cache);
  top_digest = s.ref.digest ? s.ref.digest->to_string()
                            : s.client->head_manifest(s.ref.repository, s.ref.manifest_reference());
  oci::Platform p = oci::normalized(s.platform);
  cache::Key key = converted_sif_key(top_digest, p, options.compressor);
  from_cache = true;
  return s.cache->wait_or_produce(
      key,
      [&](cache::ProducerLock& lock) {
        from_cache = false;
        discarding_on_failure(lock, [&] { produce_sif(s, top_digest, lock.partial_path(), options); });
      },
      waiting_for(s, "converting " + s.ref.to_string()));
}

// With --disable-cache the SIF lies in a cache that is about to be deleted: when it is on
// the output's filesystem ($TMPDIR there), moving it saves a copy of the whole image.
// False when it cannot be moved (another filesystem, no RENAME_NOREPLACE): copy instead.
bool move_out_of_private_cache(const cache::EntryUse& entry, const std::string& output, bool replace) {
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(entry.fd(), 0755 & ~mask) != 0) return false;
  unsigned flags = replace ? 0 : RENAME_NOREPLACE;
  if (::renameat2(AT_FDCWD, entry.path().c_str(), AT_FDCWD, output.c_str(), flags) == 0) return true;
  if (errno == EXDEV || errno == EINVAL || errno == ENOSYS) return false;
  if (errno == EEXIST) throw Error("image file already exists: " + output + " - will not overwrite (use --force)");
  throw_errno("moving the image to " + output);
}

}  // namespace

PullResult pull(const PullOptions& options, Progress& progress) {
  if (library::is_library_reference(options.reference)) return pull_library(options, progress);
  auto session = open_session(options, progress);
  Session& s = *session;
  PullResult result;
  result.output_path = output_path_for(options, default_name_of(s, options));
  return with_context("pull " + s.image_name(), [&] {
    refuse_existing(result.output_path, options.force);
    if (s.url && options.disable_cache) {
      download_to_output(s, result.output_path, options.force);
      return result;
    }
    cache::EntryUse entry = sif_entry(s, options, result.manifest_digest, result.from_cache);
    throw_if_interrupted();
    if (!(options.disable_cache && move_out_of_private_cache(entry, result.output_path, options.force)))
      cache::materialize(entry.fd(), result.output_path, 0755, options.force);
    result.warnings = s.warnings;
    return result;
  });
}

std::string cached_sif(const PullOptions& options, Progress& progress) {
  if (library::is_library_reference(options.reference)) return cached_library_sif(options, progress);
  auto session = open_session(options, progress);
  Session& s = *session;
  if (options.disable_cache)
    throw Error("running " + s.image_name() + " needs the cache (drop --disable-cache, or pull first)");
  return with_context(s.image_name(), [&] {
    std::string digest;
    bool from_cache = false;
    return sif_entry(s, options, digest, from_cache).path();
  });
}

namespace {

// `work` (a pull) in a child process that reports the path it returns through a pipe.
// Errors are printed by the child; this throws a short Error naming the image.
std::string in_subprocess(const PullOptions& options, Progress::Mode progress_mode,
                          const std::function<std::string(Progress&)>& work) {
  Pipe result = make_pipe();
  // A signal sent to the parent alone (kill PID) ends it; the pull must not carry on
  // orphaned, so it is told with SIGTERM and unwinds like after Ctrl-C. A parent that
  // leaves early stops it the same way, with time to remove its temporaries.
  Process child = Process::start(
      [&] {
        result.read_end.reset();
        install_interrupt_handlers();  // the child cleans up its temporaries; the parent just waits
        try {
          Progress progress(progress_mode);
          std::string path = work(progress);
          write_all(result.write_end.get(), std::span(reinterpret_cast<const std::uint8_t*>(path.data()), path.size()));
        } catch (const std::exception& e) {
          log::error(e.what());
          return interrupt_signal() != 0 ? 128 + interrupt_signal() : 1;
        }
        return 0;
      },
      {.parent_death_signal = SIGTERM,
       .stop_signal = SIGTERM,
       .stop_grace = std::chrono::seconds(10),
       .name = "the pull"});
  result.write_end.reset();
  const std::string path = read_to_end(result.read_end.get(), "reading the pulled image's path");
  if (!child.wait().success() || path.empty())
    throw Error("could not get " + options.reference + " (see the message above)");
  return path;
}

}  // namespace

std::string cached_sif_in_subprocess(const PullOptions& options, Progress::Mode progress_mode) {
  return in_subprocess(options, progress_mode, [&](Progress& progress) { return cached_sif(options, progress); });
}

void pull_in_subprocess(const PullOptions& options, Progress::Mode progress_mode) {
  in_subprocess(options, progress_mode, [&](Progress& progress) { return pull(options, progress).output_path; });
}

}  // namespace capsa::pull
