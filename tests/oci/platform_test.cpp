// Platform names as users and uname write them, and which images run where.
#include "oci/platform.hpp"

#include <gtest/gtest.h>

#include "oci/quoted.hpp"
#include "support/process.hpp"
#include "util/error.hpp"

namespace capsa::oci {
namespace {

struct Spelling {
  std::string written;
  std::string canonical;  // normalised, as to_string() shows it
};
void PrintTo(const Spelling& c, std::ostream* os) { *os << c.written; }

class PlatformSpelling : public testing::TestWithParam<Spelling> {};

TEST_P(PlatformSpelling, ParsesToOneCanonicalForm) {
  EXPECT_EQ(parse_platform(GetParam().written).to_string(), GetParam().canonical);
}

INSTANTIATE_TEST_SUITE_P(
    All, PlatformSpelling,
    testing::Values(Spelling{"linux/amd64", "linux/amd64"}, Spelling{"linux/x86_64", "linux/amd64"},
                    Spelling{"Linux/AMD64", "linux/amd64"}, Spelling{"linux/amd64/v3", "linux/amd64/v3"},
                    Spelling{"linux/arm64", "linux/arm64"}, Spelling{"linux/aarch64", "linux/arm64/v8"},
                    Spelling{"linux/arm64/8", "linux/arm64/v8"}, Spelling{"linux/arm64/v8.0", "linux/arm64/v8"},
                    Spelling{"linux/arm/7", "linux/arm/v7"}, Spelling{"linux/armhf", "linux/arm/v7"},
                    Spelling{"linux/armel", "linux/arm/v6"}, Spelling{"linux/i386", "linux/386"},
                    Spelling{"linux/ppc64le", "linux/ppc64le"}, Spelling{"linux/riscv64", "linux/riscv64"}));

TEST(Platform, MalformedPlatformsAreRefused) {
  for (const char* bad : {"", "linux", "linux/", "/amd64", "linux/amd64/", "linux/arm/v7/extra", "linux//v7",
                          "linux/am d64", "linux/amd64\n"}) {
    try {
      parse_platform(bad);
      ADD_FAILURE() << bad;
    } catch (const FormatError& e) {
      EXPECT_EQ(std::string(e.what()),
                "invalid platform " + quote(bad) + ": expected OS/ARCH[/VARIANT], e.g. linux/arm64/v8");
    }
  }
  EXPECT_THROW(
      {
        try {
          parse_platform("windows/amd64");
        } catch (const FormatError& e) {
          EXPECT_STREQ(e.what(), "invalid platform \"windows/amd64\": capsa runs only linux images");
          throw;
        }
      },
      FormatError);
}

TEST(Platform, ArchFlagMeansLinuxOfThatArchitecture) {
  EXPECT_EQ(platform_from_arch("amd64").to_string(), "linux/amd64");
  EXPECT_EQ(platform_from_arch("aarch64").to_string(), "linux/arm64/v8");
  EXPECT_EQ(platform_from_arch("armhf").to_string(), "linux/arm/v7");
  EXPECT_EQ(platform_from_arch("ppc64le").to_string(), "linux/ppc64le");
  EXPECT_THROW(platform_from_arch(""), FormatError);
  EXPECT_THROW(platform_from_arch("arm/v7"), FormatError);
  EXPECT_THROW(platform_from_arch("amd64 --evil"), FormatError);
}

TEST(Platform, HostPlatformAgreesWithUname) {
  auto uname = test::run_process({"uname", "-m"});
  std::string machine = uname.out.substr(0, uname.out.find('\n'));
  Platform host = host_platform();
  EXPECT_EQ(host.os, "linux");
  EXPECT_EQ(host, normalized(Platform{"linux", machine, ""}));
  if (machine == "x86_64") {
    EXPECT_EQ(host.to_string(), "linux/amd64");
  }
  if (machine == "aarch64") {
    EXPECT_EQ(host.to_string(), "linux/arm64/v8");
  }
}

TEST(Platform, FitnessFollowsTheImageSpecVariants) {
  auto fits = [](const char* offered, const char* wanted) {
    return fitness(parse_platform(offered), parse_platform(wanted)).has_value();
  };
  EXPECT_TRUE(fits("linux/arm64", "linux/arm64/v8"));
  EXPECT_TRUE(fits("linux/arm64/v8", "linux/arm64"));
  EXPECT_TRUE(fits("linux/amd64", "linux/amd64/v1"));
  EXPECT_TRUE(fits("linux/amd64/v2", "linux/amd64/v3"));
  EXPECT_FALSE(fits("linux/amd64/v3", "linux/amd64"));
  EXPECT_TRUE(fits("linux/arm/v6", "linux/arm/v7"));
  EXPECT_FALSE(fits("linux/arm", "linux/arm/v6"));  // arm without variant is v7
  EXPECT_FALSE(fits("linux/arm64", "linux/amd64"));
  EXPECT_FALSE(fits("linux/ppc64le/power9", "linux/ppc64le/power8"));
  EXPECT_FALSE(fits("linux/arm64/v8.100", "linux/arm64/v9"));  // not a level: exact match only
  EXPECT_TRUE(fits("linux/ppc64le/power9", "linux/ppc64le"));
  // Exact beats compatible.
  auto exact = fitness(parse_platform("linux/amd64/v3"), parse_platform("linux/amd64/v3"));
  auto lower = fitness(parse_platform("linux/amd64/v2"), parse_platform("linux/amd64/v3"));
  EXPECT_GT(*exact, *lower);
}

}  // namespace
}  // namespace capsa::oci
