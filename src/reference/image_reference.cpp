#include "reference/image_reference.hpp"

#include "oci/quoted.hpp"
#include "reference/name_grammar.hpp"
#include "util/error.hpp"

namespace capsa::reference {
namespace {

constexpr std::string_view kTransport = "docker://";
constexpr std::size_t kMaxNameLength = 255;  // host/name, as Docker's reference library caps it

bool is_docker_hub_alias(std::string_view host) {
  return host == "docker.io" || host == "index.docker.io" || host == "registry-1.docker.io";
}

// The first component names a registry when it looks like a host: Docker's reference
// library and enroot 4.x use this rule (§B1).
bool looks_like_registry(std::string_view component) {
  return component.find_first_of(".:") != std::string_view::npos || component == "localhost";
}

struct Split {
  std::string_view name, tag, digest;
  bool has_tag = false, has_digest = false;
};

// name[:tag][@digest]: the tag follows the last ':' after the last '/', so that
// "localhost:5000/busybox" has no tag.
Split split_reference(std::string_view ref) {
  Split s;
  if (auto at = ref.find('@'); at != std::string_view::npos) {
    s.digest = ref.substr(at + 1);
    s.has_digest = true;
    ref = ref.substr(0, at);
  }
  auto colon = ref.rfind(':');
  auto slash = ref.rfind('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    s.tag = ref.substr(colon + 1);
    s.has_tag = true;
    ref = ref.substr(0, colon);
  }
  s.name = ref;
  return s;
}

ImageReference parse(std::string_view ref) {
  if (ref.empty()) throw FormatError("the reference is empty");
  if (auto scheme = ref.find("://"); scheme != std::string_view::npos)
    throw FormatError("transport " + oci::quote(ref.substr(0, scheme)) +
                      " is not supported; capsa pulls docker:// references");
  ImageReference result;
  result.written = std::string(ref);
  Split split = split_reference(ref);
  if (split.name.size() > kMaxNameLength)
    throw FormatError("the name is " + std::to_string(split.name.size()) + " characters long; the limit is 255");
  std::string_view path = split.name;
  result.registry = kDockerHub;
  if (auto slash = path.find('/'); slash != std::string_view::npos && looks_like_registry(path.substr(0, slash))) {
    std::string_view registry = path.substr(0, slash);
    if (auto why = grammar::registry_error(registry)) throw FormatError(*why);
    result.registry = is_docker_hub_alias(registry) ? std::string(kDockerHub) : std::string(registry);
    path = path.substr(slash + 1);
  }
  if (auto why = grammar::repository_error(path)) throw FormatError(*why);
  result.repository = std::string(path);
  if (result.is_docker_hub() && path.find('/') == std::string_view::npos)
    result.repository = "library/" + result.repository;
  if (split.has_tag) {
    if (auto why = grammar::tag_error(split.tag)) throw FormatError(*why);
    result.tag = std::string(split.tag);
  }
  if (split.has_digest) result.digest = oci::Digest::parse(split.digest);
  if (!result.tag && !result.digest) result.tag = "latest";
  return result;
}

}  // namespace

ImageReference parse_image_reference(std::string_view text) {
  std::string_view ref = text;
  if (ref.substr(0, kTransport.size()) == kTransport) ref.remove_prefix(kTransport.size());
  return with_context("invalid image reference " + oci::quote(text), [&] { return parse(ref); });
}

std::string ImageReference::api_host() const { return is_docker_hub() ? "registry-1.docker.io" : registry; }

std::vector<std::string> ImageReference::credentials_keys() const {
  if (is_docker_hub())
    return {"https://index.docker.io/v1/", "index.docker.io",         "docker.io",
            "registry-1.docker.io",        "https://index.docker.io", "https://registry-1.docker.io"};
  return {registry, "https://" + registry, "http://" + registry, "https://" + registry + "/v2/",
          "https://" + registry + "/v1/"};
}

std::string ImageReference::manifest_reference() const {
  if (digest) return digest->to_string();
  return tag.value_or("latest");
}

std::string ImageReference::to_string() const {
  std::string s = registry + "/" + repository;
  if (tag) s += ":" + *tag;
  if (digest) s += "@" + digest->to_string();
  return s;
}

std::string ImageReference::default_sif_name() const {
  // Apptainer's GetName (internal/pkg/util/uri/uri.go): last '/' component of the text as
  // written; split on ':' keeping the first two parts; a tag with commas keeps its first.
  std::string_view last = written;
  if (auto slash = last.rfind('/'); slash != std::string_view::npos) last.remove_prefix(slash + 1);
  std::string_view name_part = last, tag_part = "latest";
  if (auto colon = last.find(':'); colon != std::string_view::npos) {
    name_part = last.substr(0, colon);
    tag_part = last.substr(colon + 1);
    tag_part = tag_part.substr(0, tag_part.find(':'));
    tag_part = tag_part.substr(0, tag_part.find(','));
  }
  return std::string(name_part) + "_" + std::string(tag_part) + ".sif";
}

}  // namespace capsa::reference
