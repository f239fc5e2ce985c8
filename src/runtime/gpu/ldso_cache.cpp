#include "runtime/gpu/ldso_cache.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "util/error.hpp"

namespace capsa::runtime::gpu {
namespace {

// glibc elf/cache.c and sysdeps/generic/dl-cache.h.
constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr std::size_t kOldHeaderSize = 16, kOldEntrySize = 12;
constexpr std::size_t kNewHeaderSize = 48, kNewEntrySize = 24;
constexpr std::uint32_t kElfLibc6 = 0x0003;
#if defined(__x86_64__)
constexpr std::uint32_t kOwnAbi = 0x0300;  // FLAG_X8664_LIB64
#elif defined(__aarch64__)
constexpr std::uint32_t kOwnAbi = 0x0a00;  // FLAG_AARCH64_LIB64
#else
constexpr std::uint32_t kOwnAbi = 0x0000;  // 32-bit and other ABIs carry no ABI flag
#endif

std::uint32_t u32_at(std::string_view data, std::size_t offset) {
  if (offset > data.size() || data.size() - offset < 4) throw FormatError("ld.so cache truncated");
  std::uint32_t value;
  std::memcpy(&value, data.data() + offset, 4);  // the cache is written in host byte order
  return value;
}

std::string string_at(std::string_view table, std::uint32_t offset) {
  if (offset >= table.size()) throw FormatError("ld.so cache string offset out of range");
  std::size_t end = table.find('\0', offset);
  if (end == std::string_view::npos) throw FormatError("ld.so cache string not terminated");
  return std::string(table.substr(offset, end - offset));
}

// The new table may follow the old one, aligned to 8 bytes.
std::size_t new_table_offset(std::string_view data) {
  if (data.substr(0, kNewMagic.size()) == kNewMagic) return 0;
  if (data.substr(0, kOldMagic.size()) != kOldMagic) throw FormatError("not an ld.so cache (unknown magic)");
  std::uint64_t old_entries = u32_at(data, kOldMagic.size() + 1);
  std::uint64_t end = kOldHeaderSize + old_entries * kOldEntrySize;
  end = (end + 7) & ~std::uint64_t{7};
  if (end > data.size() || data.substr(end, kNewMagic.size()) != kNewMagic)
    throw FormatError("ld.so cache has only the old format, which capsa does not read");
  return static_cast<std::size_t>(end);
}

}  // namespace

std::vector<CacheEntry> parse_ldso_cache(std::string_view data) {
  const std::size_t start = new_table_offset(data);
  std::string_view table = data.substr(start);  // string offsets are relative to this
  const std::uint64_t count = u32_at(table, 20);
  if (count > (table.size() - kNewHeaderSize) / kNewEntrySize) throw FormatError("ld.so cache entry count too large");
  std::vector<CacheEntry> entries;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::size_t at = kNewHeaderSize + static_cast<std::size_t>(i) * kNewEntrySize;
    const std::uint32_t flags = u32_at(table, at);
    if ((flags & 0xff) != kElfLibc6 || (flags & 0xff00) != kOwnAbi) continue;
    entries.push_back({string_at(table, u32_at(table, at + 4)), string_at(table, u32_at(table, at + 8))});
  }
  return entries;
}

std::string ldso_cache_path() {
  if (const char* forced = std::getenv("CAPSA_LDSO_CACHE"); forced && *forced) return forced;
  return "/etc/ld.so.cache";
}

}  // namespace capsa::runtime::gpu
