#pragma once
// FNV-1a (64 bits): a fast, stable hash for names and buckets where a collision only
// costs sharing (kept images' record names, root's lone-start lock buckets). Never for
// anything an attacker could exploit by choosing a collision; no cryptographic library
// is needed for it (the runner loads no libcrypto: src/cli/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace capsa {

class Fnv1a {
 public:
  Fnv1a& add(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < size; ++i) hash_ = (hash_ ^ bytes[i]) * kPrime;
    return *this;
  }
  Fnv1a& add(std::string_view text) { return add(text.data(), text.size()); }
  Fnv1a& add(std::uint64_t number) { return add(&number, sizeof number); }
  std::uint64_t value() const { return hash_; }

 private:
  static constexpr std::uint64_t kPrime = 1099511628211ull;
  std::uint64_t hash_ = 14695981039346656037ull;  // the offset basis
};

}  // namespace capsa
