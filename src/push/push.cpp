#include "push/push.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>
#include <vector>

#include "oci/digest.hpp"
#include "oci/media_types.hpp"
#include "oci/sif_artifact.hpp"
#include "push/sif_created.hpp"
#include "reference/image_reference.hpp"
#include "registry/client.hpp"
#include "registry/options.hpp"
#include "sif/image.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"

namespace capsa::push {

namespace {

constexpr std::string_view kOrasScheme = "oras://";

// The SIF's sha256, read once (the upload reads it again, chunk by chunk).
std::string file_digest(int fd, std::uint64_t size, Progress& progress, const std::string& task) {
  oci::Hasher hasher("sha256");
  std::vector<char> buffer(4 << 20);
  progress.start(task, size);
  for (std::uint64_t offset = 0; offset < size;) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), size - offset));
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_errno("reading the image to push");
    if (got == 0) throw Error("the image to push shrank while it was being read");
    hasher.update(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    offset += static_cast<std::uint64_t>(got);
    progress.update(task, offset);
    throw_if_interrupted();
  }
  progress.finish(task);
  return hasher.finish().to_string();
}

reference::ImageReference parse_destination(const std::string& reference) {
  if (!pull::is_oras_reference(reference)) {
    if (reference.starts_with("library://"))
      throw Error("cannot push to \"" + reference +
                  "\": library:// is not supported in this version of capsa; use oras://");
    throw Error("cannot push to \"" + reference + "\": the destination must be oras://REGISTRY/REPOSITORY[:TAG]");
  }
  reference::ImageReference ref = reference::parse_image_reference(reference.substr(kOrasScheme.size()));
  if (ref.digest) throw Error("cannot push to \"" + reference + "\": a pushed image is named by a tag, not a digest");
  return ref;
}

}  // namespace

PushResult push(const PushOptions& options, Progress& progress) {
  const reference::ImageReference ref = parse_destination(options.reference);
  PushResult result;
  result.reference = ref.to_string();
  return with_context("push " + options.image + " to oras://" + result.reference, [&] {
    struct stat st {};
    if (::stat(options.image.c_str(), &st) != 0) throw_errno(options.image);
    if (!S_ISREG(st.st_mode) || !sif::looks_like_sif(options.image))
      throw Error(options.image + " is not a SIF image; oras:// holds SIF files only");
    const sif::Image image = sif::Image::open(options.image);
    const std::uint64_t size = image.file_size();

    oci::SifLayer layer;
    layer.size = size;
    layer.title = std::filesystem::path(options.image).filename().string();
    layer.digest = file_digest(image.fd(), size, progress, "hashing " + layer.title);
    std::map<std::string, std::string> annotations = options.annotations;
    if (auto created = sif_created(image)) annotations[std::string(oci::kCreatedAnnotation)] = *created;
    const std::string manifest = oci::sif_manifest(layer, annotations);

    registry::ClientOptions client_options = registry::options_from_environment();
    client_options.insecure_http = client_options.insecure_http || options.registry.nohttps;
    client_options.push_access = true;
    client_options.log = [&](std::string_view line) { progress.note(std::string(line)); };
    registry::RegistryClient client(ref.api_host(), client_options, pull::credentials_for(options.registry, ref));

    const std::string config_digest = oci::Digest::sha256_of(oci::kEmptyJsonConfig).to_string();
    if (!client.has_blob(ref.repository, config_digest))
      client.push_small_blob(ref.repository, std::string(oci::kEmptyJsonConfig), config_digest);
    result.layer_existed = client.has_blob(ref.repository, layer.digest);
    if (!result.layer_existed) {
      const std::string task = "uploading " + layer.title;
      progress.start(task, size);
      try {
        client.push_blob(
            ref.repository, image.fd(), size, layer.digest,
            [&](std::uint64_t done, std::optional<std::uint64_t>) { progress.update(task, done); }, &interrupt_flag());
      } catch (const Error&) {
        throw_if_interrupted();
        throw;
      }
      progress.finish(task);
    }
    throw_if_interrupted();  // before the tag is published
    result.manifest_digest = client.put_manifest(ref.repository, ref.tag.value_or("latest"), manifest,
                                                 std::string(oci::media_type::kOciManifest));
    return result;
  });
}

}  // namespace capsa::push
