#include "library/reference.hpp"

#include <vector>

#include "util/error.hpp"

namespace capsa::library {
namespace {

constexpr std::string_view kScheme = "library://";

// Entity, collection and container names: the Library API's lower-case words.
bool is_name(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
  return s.front() != '.' && s.front() != '-';
}

bool is_tag(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
          c == '.'))
      return false;
  return true;
}

bool is_sha256_hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

}  // namespace

bool is_library_reference(std::string_view text) { return text.rfind(kScheme, 0) == 0; }

LibraryReference parse_library_reference(std::string_view text) {
  auto fail = [&](const std::string& why) -> FormatError {
    return FormatError("invalid library reference \"" + std::string(text) + "\": " + why +
                       " (library://[ENTITY/[COLLECTION/]]CONTAINER[:TAG])");
  };
  if (!is_library_reference(text)) throw fail("it does not start with library://");
  LibraryReference ref;
  ref.written = std::string(text);
  std::string_view rest = text.substr(kScheme.size());
  if (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);  // library:///entity/... names no host
  if (rest.empty()) throw fail("no image named");

  // The tag or digest belongs to the last component.
  std::size_t last_slash = rest.rfind('/');
  std::size_t at = rest.find('@', last_slash == std::string_view::npos ? 0 : last_slash);
  std::size_t colon = rest.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  std::string_view path = rest;
  if (at != std::string_view::npos) {
    std::string_view digest = rest.substr(at + 1);
    if (digest.rfind("sha256:", 0) != 0 || !is_sha256_hex(digest.substr(7)))
      throw fail("a digest is @sha256: and 64 lower-case hex digits");
    ref.digest = std::string(digest);
    ref.tag = "sha256." + std::string(digest.substr(7));
    path = rest.substr(0, at);
    if (path.find(':', last_slash == std::string_view::npos ? 0 : last_slash) != std::string_view::npos)
      throw fail("give a tag or a digest, not both");
  } else if (colon != std::string_view::npos) {
    ref.tag = std::string(rest.substr(colon + 1));
    if (!is_tag(ref.tag)) throw fail("the tag \"" + ref.tag + "\" is not a valid tag");
    path = rest.substr(0, colon);
  }

  std::vector<std::string_view> parts = split_path(path);
  if (parts.size() == 4) {  // HOST[:PORT]/ENTITY/COLLECTION/CONTAINER
    ref.host = std::string(parts[0]);
    if (ref.host.empty() || ref.host.find_first_of(" @?#") != std::string::npos) throw fail("the host is not valid");
    parts.erase(parts.begin());
  }
  if (parts.size() > 3) throw fail("too many path components");
  for (std::string_view part : parts)
    if (!is_name(part))
      throw fail("\"" + std::string(part) + "\" is not a valid name (lower-case letters, digits, '.', '_', '-')");
  ref.container = std::string(parts.back());
  if (parts.size() >= 2) ref.collection = std::string(parts[parts.size() - 2]);
  if (parts.size() == 3) ref.entity = std::string(parts[0]);
  return ref;
}

}  // namespace capsa::library
