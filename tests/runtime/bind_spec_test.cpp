#include "runtime/bind_spec.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa::runtime {
namespace {

BindSpec bind(std::string src, std::string dst, bool ro = false) {
  BindSpec b;
  b.source = std::move(src);
  b.destination = std::move(dst);
  b.read_only = ro;
  return b;
}

TEST(BindSpec, SourceOnlyBindsAtTheSamePath) {
  EXPECT_EQ(parse_bind_list("/scratch"), std::vector<BindSpec>{bind("/scratch", "/scratch")});
}

TEST(BindSpec, SourceDestinationAndOptions) {
  EXPECT_EQ(parse_bind_list("/scratch/data:/data"), std::vector<BindSpec>{bind("/scratch/data", "/data")});
  EXPECT_EQ(parse_bind_list("/scratch/data:/data:ro"), std::vector<BindSpec>{bind("/scratch/data", "/data", true)});
  EXPECT_EQ(parse_bind_list("/opt:ro"), std::vector<BindSpec>{bind("/opt", "/opt", true)});
}

TEST(BindSpec, CommaListsAndOptionListsAreToldApart) {
  auto binds = parse_bind_list("/a:/x:ro,/b,/c:/y");
  ASSERT_EQ(binds.size(), 3u);
  EXPECT_EQ(binds[0], bind("/a", "/x", true));
  EXPECT_EQ(binds[1], bind("/b", "/b"));
  EXPECT_EQ(binds[2], bind("/c", "/y"));

  auto image = parse_bind_list("data.sif:/data:ro,image-src=/payload,/other");
  ASSERT_EQ(image.size(), 2u);
  EXPECT_TRUE(image[0].read_only);
  EXPECT_EQ(image[0].image_source, "/payload");
  EXPECT_EQ(image[1].source, "/other");
  EXPECT_EQ(parse_bind_list("img.sif:/d:id=3")[0].sif_id, 3u);
}

TEST(BindSpec, EscapedSeparatorsArePartOfPaths) {
  auto binds = parse_bind_list("/odd\\,name\\:x:/in\\,side");
  ASSERT_EQ(binds.size(), 1u);
  EXPECT_EQ(binds[0].source, "/odd,name:x");
  EXPECT_EQ(binds[0].destination, "/in,side");
}

TEST(BindSpec, BadSpecsNameTheSpecAndTheProblem) {
  auto message = [](std::string_view spec) {
    try {
      parse_bind_list(spec);
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("/a:/b:ro:x"), "invalid bind \"/a:/b:ro:x\": too many ':' (expected SRC[:DEST[:OPTIONS]])");
  EXPECT_EQ(message("/a:relative"), "invalid bind \"/a:relative\": the destination must be an absolute path");
  EXPECT_EQ(message("/a:/b:rx"), "invalid bind \"/a:/b:rx\": unknown option \"rx\" (valid: ro, rw, image-src=PATH, id=N)");
  EXPECT_EQ(message(":/b"), "invalid bind \":/b\": the source path is empty");
  EXPECT_EQ(message("/a:/b:id=0"), "invalid bind \"/a:/b:id=0\": id= needs a SIF object ID (a positive number)");
}

TEST(MountSpec, DockerStyleCsv) {
  BindSpec b = parse_mount("type=bind,src=/host,dst=/ctr,ro");
  EXPECT_EQ(b, bind("/host", "/ctr", true));
  BindSpec quoted = parse_mount("type=bind,\"source=/a,b\",target=/c:d,nonested");
  EXPECT_EQ(quoted.source, "/a,b");
  EXPECT_EQ(quoted.destination, "/c:d");
  EXPECT_FALSE(quoted.nested);
  EXPECT_THROW(parse_mount("type=volume,src=/a,dst=/b"), FormatError);
  EXPECT_THROW(parse_mount("src=/a,dst=/b"), FormatError);
  EXPECT_THROW(parse_mount("type=bind,src=/a,dst=/b,bind-propagation=shared"), FormatError);
  EXPECT_THROW(parse_mount("type=bind,src=\"/a,dst=/b"), FormatError);
}

TEST(BindEnvironment, ApptainerNamesWinAndBindPathFollows) {
  std::map<std::string, std::string> env = {{"APPTAINER_BIND", "/a"},
                                            {"SINGULARITY_BIND", "/ignored"},
                                            {"SINGULARITY_BINDPATH", "/b:/bb:ro"}};
  auto binds = binds_from_environment(env);
  ASSERT_EQ(binds.size(), 2u);
  EXPECT_EQ(binds[0], bind("/a", "/a"));
  EXPECT_EQ(binds[1], bind("/b", "/bb", true));
  EXPECT_THROW(binds_from_environment({{"SINGULARITY_BIND", "/a:x"}}), FormatError);
}

TEST(BindEnvironment, FormattedListParsesBackToTheSameBinds) {
  std::vector<BindSpec> binds = {bind("/a,1", "/b:2", true), bind("/c", "/c")};
  binds[1].sif_id = 4;
  EXPECT_EQ(parse_bind_list(format_bind_list(binds)), binds);
}

// Found by fuzz_bind_spec (tests/fuzz/corpus/bind_spec/regression-trailing-backslash):
// a path ending in a backslash came back from APPTAINER_BIND with its ':' escaped, i.e. as
// another path; and "\\," lost its backslash. Escapes are now read once, and "\\" is one.
TEST(BindEnvironment, BackslashesSurviveTheRoundTrip) {
  const std::string found = "/+-\273/a\\";
  auto parsed = parse_bind_list(found);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].source, "/+-\273/a\\");
  EXPECT_EQ(parse_bind_list(format_bind_list(parsed)), parsed);
  std::vector<BindSpec> binds = {bind("/a\\", "/b\\,c", true), bind("/d\\:e\\x", "/f")};
  binds[1].image_source = "/in\\,side:x";
  EXPECT_EQ(parse_bind_list(format_bind_list(binds)), binds);
  EXPECT_EQ(parse_bind_list("/a\\\\:/b")[0].source, "/a\\") << "\\\\ is one backslash";
  EXPECT_EQ(parse_bind_list("/a\\b")[0].source, "/a\\b") << "other backslashes are kept";
}

}  // namespace
}  // namespace capsa::runtime
