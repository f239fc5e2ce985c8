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

std::string mount_error(std::string_view spec) {
  try {
    parse_mount(spec);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(MountSpec, DockerStyleCsv) {
  EXPECT_EQ(parse_mount("type=bind,src=/host,dst=/ctr,ro"), std::vector<BindSpec>{bind("/host", "/ctr", true)});
  std::vector<BindSpec> quoted = parse_mount("type=bind,\"source=/a,b\",target=/c:d,nonested");
  ASSERT_EQ(quoted.size(), 1u);
  EXPECT_EQ(quoted[0].source, "/a,b");
  EXPECT_EQ(quoted[0].destination, "/c:d");
  EXPECT_FALSE(quoted[0].nested);
  EXPECT_EQ(parse_mount("\"src=/say \"\"hi\"\"\",dst=/d")[0].source, "/say \"hi\"") << "\"\" is one quote";
  EXPECT_EQ(parse_mount("src= /a,dst=/b")[0].source, " /a") << "spaces are kept";
}

TEST(MountSpec, WithoutATypeAMountIsABind) {
  EXPECT_EQ(parse_mount("src=/a,dst=/b"), std::vector<BindSpec>{bind("/a", "/b")});
  EXPECT_EQ(parse_mount("destination=/b,source=/a,readonly"), std::vector<BindSpec>{bind("/a", "/b", true)});
}

TEST(MountSpec, OneMountPerLine) {
  EXPECT_EQ(parse_mount("src=/a,dst=/b\r\n\nsrc=/c,dst=/d\n"), (std::vector<BindSpec>{bind("/a", "/b"), bind("/c", "/d")}));
  EXPECT_EQ(parse_mount("\"src=/a\nb\",dst=/b")[0].source, "/a\nb") << "a quoted newline is part of the path";
  EXPECT_EQ(parse_mount(""), std::vector<BindSpec>{}) << "no mount, as Apptainer";
}

TEST(MountSpec, BadSpecsNameTheSpecAndTheProblem) {
  EXPECT_EQ(mount_error("type=volume,src=/a,dst=/b"), "invalid bind \"type=volume,src=/a,dst=/b\": only type=bind is supported");
  EXPECT_EQ(mount_error("type=bind,src=/a,dst=/b,bind-propagation=shared"),
            "invalid bind \"type=bind,src=/a,dst=/b,bind-propagation=shared\": bind-propagation is not supported");
  EXPECT_EQ(mount_error("src=/a,dst=/b,size=1"), "invalid bind \"src=/a,dst=/b,size=1\": unknown key \"size\"");
  EXPECT_EQ(mount_error("dst=/b"), "invalid bind \"dst=/b\": src= is required");
  EXPECT_EQ(mount_error("src=/a"), "invalid bind \"src=/a\": dst= is required");
  EXPECT_EQ(mount_error("src=/a,dst=b"), "invalid bind \"src=/a,dst=b\": the destination must be an absolute path");
  // The CSV rules, as Go's encoding/csv (tests/util/csv_fields_test.cpp has them all).
  EXPECT_EQ(mount_error("type=bind,\"src=/a,dst=/b"),
            "invalid bind \"type=bind,\"src=/a,dst=/b\": column 11: the double quote that opens this field is never closed");
  EXPECT_EQ(mount_error("src=/a\"b,dst=/c"),
            "invalid bind \"src=/a\"b,dst=/c\": column 7: a double quote in an unquoted field (quote the whole field, "
            "and double each quote inside it)");
  EXPECT_EQ(mount_error("src=/a,dst=/b\nsrc=/c,dst=/d,ro"),
            "invalid bind \"src=/a,dst=/b\nsrc=/c,dst=/d,ro\": line 2 has 3 fields where the first has 2");
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
