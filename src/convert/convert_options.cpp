// The conversion's options read from names and the environment. A file of their own:
// pack.cpp needs them, and the lean runner reaches pack.cpp (a temporary sandbox) without
// needing the layer conversion, whose libarchive and libcrypto would then be loaded by
// every container start (src/cli/CMakeLists.txt).
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "convert/convert.hpp"
#include "util/error.hpp"

namespace capsa::convert {

Compressor compressor_named(const std::string& name) {
  if (name == "zstd") return Compressor::Zstd;
  if (name == "gzip") return Compressor::Gzip;
  if (name == "xz") return Compressor::Xz;
  throw Error("unknown --compression \"" + name + "\" (zstd, gzip or xz)");
}

std::optional<std::int64_t> source_date_epoch_from_environment() {
  const char* value = std::getenv("SOURCE_DATE_EPOCH");
  if (!value || !*value) return std::nullopt;
  std::int64_t parsed = 0;
  std::string_view text(value);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (ec != std::errc() || end != text.data() + text.size() || parsed < 0) return std::nullopt;
  return parsed;
}

std::optional<std::uint64_t> max_unpacked_bytes_from_environment() {
  const char* value = std::getenv("CAPSA_MAX_UNPACKED_SIZE");
  if (!value || !*value) return kDefaultMaxUnpackedBytes;
  std::string_view text(value);
  std::uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  int shift = -1;
  if (suffix.empty())
    shift = 0;
  else if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M")
    shift = 20;
  else if (suffix == "G")
    shift = 30;
  else if (suffix == "T")
    shift = 40;
  if (ec != std::errc() || shift < 0 || (shift > 0 && number > (UINT64_MAX >> shift)))
    throw Error("CAPSA_MAX_UNPACKED_SIZE: \"" + std::string(text) +
                "\" is not a size (bytes, or a number with a K, M, G or T suffix, e.g. 512G; 0 for no limit)");
  if (number == 0) return std::nullopt;
  return number << shift;
}

}  // namespace capsa::convert
