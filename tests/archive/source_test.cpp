// The spellings of docker-archive:, oci-archive: and oci: references, and Apptainer's
// default output names for them (uri.GetName in Apptainer 1.4).
#include <gtest/gtest.h>

#include "archive/source.hpp"
#include "util/error.hpp"

namespace capsa::archive {
namespace {

TEST(LocalSource, EachSchemeSplitsPathAndName) {
  LocalSource a = parse_local_source("docker-archive:/tmp/img.tar:busybox:1.36");
  EXPECT_EQ(a.kind, LocalSource::Kind::DockerArchive);
  EXPECT_EQ(a.path, "/tmp/img.tar");
  EXPECT_EQ(a.name, "busybox:1.36");
  LocalSource b = parse_local_source("oci-archive:img.tar:v1");
  EXPECT_EQ(b.kind, LocalSource::Kind::OciArchive);
  EXPECT_EQ(b.path, "img.tar");
  EXPECT_EQ(b.name, "v1");
  LocalSource c = parse_local_source("oci:layout");
  EXPECT_EQ(c.kind, LocalSource::Kind::OciLayout);
  EXPECT_EQ(c.path, "layout");
  EXPECT_FALSE(c.name.has_value());
  EXPECT_EQ(c.written, "oci:layout");
}

TEST(LocalSource, TheUriSpellingDropsItsSlashes) {
  EXPECT_EQ(parse_local_source("docker-archive://img.tar").path, "img.tar");
  EXPECT_EQ(parse_local_source("docker-archive:///tmp/img.tar").path, "/tmp/img.tar");
  EXPECT_EQ(parse_local_source("docker-archive:@0").path, "@0") << "a file may be named so";
}

TEST(LocalSource, OnlyTheThreeSchemesAndAPathAreAccepted) {
  EXPECT_TRUE(is_local_source("oci:x"));
  EXPECT_FALSE(is_local_source("docker://busybox"));
  EXPECT_FALSE(is_local_source("ocifile"));
  EXPECT_FALSE(is_local_source("./oci-archive.tar"));
  EXPECT_THROW(parse_local_source("oci-archive:"), FormatError);
  EXPECT_THROW(parse_local_source("docker-archive::busybox:latest"), FormatError);
  EXPECT_THROW(parse_local_source("docker://busybox"), FormatError);
}

TEST(LocalSource, DefaultNamesAreApptainers) {
  EXPECT_EQ(default_sif_name("docker-archive:/tmp/img.tar"), "img.tar_latest.sif");
  EXPECT_EQ(default_sif_name("docker-archive:/tmp/img.tar:busybox:1.36"), "img.tar_busybox.sif");
  EXPECT_EQ(default_sif_name("oci-archive:img.tar:v1"), "img.tar_v1.sif");
  EXPECT_EQ(default_sif_name("oci:/data/layout:1.0"), "layout_1.0.sif");
  EXPECT_EQ(default_sif_name("oci:/data/layout/"), "layout_latest.sif");
  EXPECT_EQ(default_sif_name("docker-archive://img.tar"), "img.tar_latest.sif");
}

}  // namespace
}  // namespace capsa::archive
