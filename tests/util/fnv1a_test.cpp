// Fnv1a (util/fnv1a.hpp): the published 64-bit FNV-1a values, and numbers hashed as
// their bytes.
#include "util/fnv1a.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace capsa {
namespace {

TEST(Fnv1a, GivesThePublishedValues) {
  EXPECT_EQ(Fnv1a().value(), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a().add("a").value(), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a().add("foobar").value(), 0x85944171f73967e8ull);
  EXPECT_EQ(Fnv1a().add("foo").add("bar").value(), Fnv1a().add("foobar").value());
}

TEST(Fnv1a, HashesANumberAsItsBytes) {
  const std::uint64_t number = 0x0123456789abcdefull;
  EXPECT_EQ(Fnv1a().add(number).value(), Fnv1a().add(&number, sizeof number).value());
  EXPECT_NE(Fnv1a().add(std::uint64_t{1}).add(std::uint64_t{2}).value(),
            Fnv1a().add(std::uint64_t{2}).add(std::uint64_t{1}).value());
}

}  // namespace
}  // namespace capsa
