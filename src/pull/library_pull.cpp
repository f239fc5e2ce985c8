#include "pull/library_pull.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "cache/cache.hpp"
#include "library/client.hpp"
#include "library/reference.hpp"
#include "oci/platform.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/interrupt.hpp"
#include "util/log.hpp"

namespace capsa::pull {
namespace {

// The cache a library pull uses: the shared one, or with --disable-cache a private one
// removed at the end.
struct LibraryCache {
  std::unique_ptr<cache::Cache> cache;
  std::optional<std::string> private_root;
  bool keep = false;  // --no-cleanup
  explicit LibraryCache(const PullOptions& options) : keep(options.no_cleanup) {
    if (options.disable_cache) {
      private_root = make_private_cache_root(options.tmpdir);
      cache = std::make_unique<cache::Cache>(*private_root);
    } else {
      cache = std::make_unique<cache::Cache>(options.cache_dir ? cache::Cache(*options.cache_dir)
                                                               : cache::Cache::open_default());
    }
  }
  ~LibraryCache() {
    if (private_root) remove_private_cache_root(*private_root, keep);
  }
  LibraryCache(const LibraryCache&) = delete;
  LibraryCache& operator=(const LibraryCache&) = delete;
};

std::string architecture_of(const PullOptions& options) {
  return oci::normalized(options.platform ? *options.platform : oci::host_platform()).architecture;
}

// The SIF's cache entry (a blob, by the sha256 the library records), downloaded here unless
// it is cached or another process is downloading it.
cache::EntryUse library_entry(const PullOptions& options, LibraryCache& where, Progress& progress, bool& from_cache) {
  const library::LibraryReference ref = library::parse_library_reference(options.reference);
  registry::ClientOptions client_options = registry::options_from_environment();
  client_options.log = [&progress](std::string_view line) { progress.note(std::string(line)); };
  const library::LibraryEndpoint endpoint =
      library::library_endpoint(ref, options.library, library::Remotes::load(), ::geteuid() == 0);
  const std::string& base_url = endpoint.url;
  // A library given as http:// (a test or a site-internal server) is reached over plain
  // HTTP, its blob store too; an https:// one never redirects to plain HTTP.
  client_options.insecure_http =
      client_options.insecure_http || options.registry.nohttps || base_url.rfind("http://", 0) == 0;
  library::LibraryClient client(base_url, client_options);
  client.token = endpoint.token;
  client.remote = endpoint.remote;
  const std::string architecture = architecture_of(options);
  const library::ImageRecord record = client.image(ref, architecture);
  from_cache = true;
  return where.cache->wait_or_produce(
      cache::Key::blob(record.digest),
      [&](cache::ProducerLock& lock) {
        from_cache = false;
        try {
          UniqueFd fd(::open(lock.partial_path().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
          if (!fd) throw_errno("creating " + lock.partial_path());
          const std::string task = "downloading " + ref.api_path();
          progress.start(task, record.size);
          client.download(ref, architecture, record, fd.get(), [&](std::uint64_t done) {
            throw_if_interrupted();
            progress.update(task, done);
          });
          progress.finish(task);
        } catch (...) {
          try {
            lock.discard_partial();  // a wrong or cut-off file is never resumed or used
          } catch (const Error&) {
            // the next producer truncates it anyway; the original failure is what matters
          }
          throw;
        }
      },
      {.timeout = std::nullopt, .on_wait = [&](const cache::Key&, const std::string& holder) {
         progress.note("waiting for " + (holder.empty() ? std::string("another process") : holder) +
                       " to finish downloading " + ref.written);
       }});
}

}  // namespace

std::string library_output_path(const PullOptions& options) {
  std::string name =
      options.output ? *options.output : library::parse_library_reference(options.reference).default_sif_name();
  return options.output_dir ? *options.output_dir + "/" + name : name;
}

PullResult pull_library(const PullOptions& options, Progress& progress) {
  PullResult result;
  result.output_path = library_output_path(options);
  return with_context("pull " + options.reference, [&] {
    struct stat st {};
    if (!options.force && ::lstat(result.output_path.c_str(), &st) == 0)
      throw Error("image file already exists: " + result.output_path + " - will not overwrite (use --force)");
    LibraryCache where(options);
    cache::EntryUse entry = library_entry(options, where, progress, result.from_cache);
    result.manifest_digest = entry.key().name();
    throw_if_interrupted();
    cache::materialize(entry.fd(), result.output_path, 0755, options.force);
    return result;
  });
}

std::string cached_library_sif(const PullOptions& options, Progress& progress) {
  if (options.disable_cache)
    throw Error("running a library:// image needs the cache (drop --disable-cache, or pull first)");
  return with_context(options.reference, [&] {
    LibraryCache where(options);
    bool from_cache = false;
    return library_entry(options, where, progress, from_cache).path();
  });
}

}  // namespace capsa::pull
