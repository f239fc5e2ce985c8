#pragma once
// The host's ld.so cache (/etc/ld.so.cache), read directly: `ldconfig -p` prints the same
// table, but parsing its text output depends on its wording and needs a child process;
// the format is small and stable (glibc elf/cache.c, "glibc-ld.so.cache1.1" since 2.32,
// possibly after the old "ld.so-1.7.0" table). Every read is bounds-checked: the file
// is untrusted input to this parser.
#include <string>
#include <string_view>
#include <vector>

namespace capsa::runtime::gpu {

struct CacheEntry {
  std::string name;  // the soname, e.g. libcuda.so.1
  std::string path;  // the host file, e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.1
};

// The entries of this process's own ABI (x86-64 libc6 on x86-64), in cache order.
// Throws capsa::FormatError on a malformed cache.
std::vector<CacheEntry> parse_ldso_cache(std::string_view data);

// CAPSA_LDSO_CACHE (tests) or /etc/ld.so.cache.
std::string ldso_cache_path();

}  // namespace capsa::runtime::gpu
