// The apptainer.conf syntax: config/config_file.hpp and config/directives.hpp.
#include "config/config_file.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/directives.hpp"
#include "util/error.hpp"

namespace capsa::config {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "/etc/capsa/capsa.conf", nullptr);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigFile, ReadsDirectivesCommentsAndRepeatedLists) {
  std::vector<std::string> warnings;
  ConfigFile file = parse_config(
      "# a comment\n\n  mount home = no\n"
      "bind path = /scratch\nbind path=/work:/data:ro, /groups\n"
      "limit container paths = /a,, /b\n"
      "mount home = yes\n"
      "mksquashfs procs =\n",
      "site.conf", &warnings);
  // Only the repeated `mount home` with another value (ConfigFile.RepeatedDirective...).
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(file.values("bind path"), (std::vector<std::string>{"/scratch", "/work:/data:ro", "/groups"}));
  EXPECT_EQ(file.values("limit container paths"), (std::vector<std::string>{"/a", "/b"}));
  // Not a list: every value in order, the first one counts (Apptainer's value[0]).
  EXPECT_EQ(file.values("mount home"), (std::vector<std::string>{"no", "yes"}));
  EXPECT_FALSE(file.has("mksquashfs procs")) << "an empty value is no setting";
  EXPECT_EQ(file.lines()[0].line, 3);
  EXPECT_TRUE(file.read());
}

TEST(ConfigFile, UnknownDirectiveIsAWarningNamingFileAndLine) {
  std::vector<std::string> warnings;
  ConfigFile file =
      parse_config("mount home = yes\nmount hmoe = no\nfrobnicate everything = 3\n", "/x/capsa.conf", &warnings);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "/x/capsa.conf:2: unknown directive \"mount hmoe\" ignored (did you mean \"mount home\"?)");
  EXPECT_EQ(warnings[1], "/x/capsa.conf:3: unknown directive \"frobnicate everything\" ignored");
  EXPECT_FALSE(file.has("mount hmoe"));
  EXPECT_EQ(file.values("mount home"), std::vector<std::string>{"yes"});
}

TEST(ConfigFile, RepeatedDirectiveWithAnotherValueIsAWarningNamingBothLines) {
  std::vector<std::string> warnings;
  ConfigFile file = parse_config(
      "mount home = no\nbind path = /a\nbind path = /b\nmount tmp = no\nmount tmp = no\n# later, appended:\n"
      "mount home = yes\n",
      "/x/capsa.conf", &warnings);
  // A list adds its lines, the same value twice changes nothing: only the conflict is said.
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "/x/capsa.conf:7: \"mount home = yes\" is ignored: the first line, /x/capsa.conf:1 (\"mount home = no\"), "
            "counts");
  EXPECT_EQ(file.values("mount home").front(), "no") << "Apptainer's rule: the first line counts";
}

TEST(ConfigFile, MalformedLineIsAnErrorNamingFileAndLine) {
  EXPECT_EQ(error_of("mount home = yes\nthis line has no equals sign\n"),
            "/etc/capsa/capsa.conf:2: \"this line has no equals sign\" is not a directive (write `directive = value`, "
            "or `#` before a comment)");
  EXPECT_EQ(error_of("\n\nbind/path = /x\n").rfind("/etc/capsa/capsa.conf:3: ", 0), 0u);
  EXPECT_EQ(error_of("= yes\n").rfind("/etc/capsa/capsa.conf:1: ", 0), 0u);
}

TEST(ConfigFile, BadValueIsAnErrorNamingFileLineAndWhatIsExpected) {
  EXPECT_EQ(error_of("\nmount home = maybe\n"), "/etc/capsa/capsa.conf:2: \"mount home = maybe\": expected yes or no");
  EXPECT_EQ(error_of("mount dev = some"),
            "/etc/capsa/capsa.conf:1: \"mount dev = some\": expected one of yes, no, minimal");
  EXPECT_EQ(error_of("max loop devices = -1\n"),
            "/etc/capsa/capsa.conf:1: \"max loop devices = -1\": expected a whole number");
  EXPECT_EQ(error_of("mksquashfs mem = lots\n"),
            "/etc/capsa/capsa.conf:1: \"mksquashfs mem = lots\": expected a size such as 500M or 1G");
  // A comment after the value is part of it, as in Apptainer: an error, not a silent yes.
  EXPECT_NE(error_of("mount home = yes # keep\n"), "");
  EXPECT_EQ(error_of("mksquashfs mem = 1G\nmax loop devices = 512\nmount dev = minimal\n"), "");
}

TEST(ConfigFile, ApptainersShippedFileReadsWithoutAWord) {
  // Every directive line of Apptainer 1.4's etc/conf/apptainer.conf as it installs it
  // (its template with the defaults), comments of our own (tests/config/data).
  std::ifstream in(std::string(CAPSA_TEST_DATA) + "/apptainer-1.4-default.conf");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> warnings;
  ConfigFile file = parse_config(text.str(), "apptainer.conf", &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(file.values("bind path"), (std::vector<std::string>{"/etc/localtime", "/etc/hosts"}));
  EXPECT_EQ(file.values("enable overlay"), std::vector<std::string>{"yes"});
  EXPECT_FALSE(file.has("allow setuid-mount squashfs")) << "commented out when at its default";
}

TEST(ConfigFile, CapsasShippedFileReadsWithoutAWord) {
  std::ifstream in(std::string(CAPSA_SOURCE_DIR) + "/etc/capsa.conf");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> warnings;
  ConfigFile file = parse_config(text.str(), "capsa.conf", &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  // Each directive it sets is at its default.
  for (const ConfigLine& line : file.lines()) {
    const Directive* d = find_directive(line.directive);
    ASSERT_NE(d, nullptr);
    if (d->kind != ValueKind::list) {
      EXPECT_EQ(line.value, d->default_value) << line.directive;
    }
  }
}

TEST(ConfigFile, SingularityCEDirectivesAreKnown) {
  std::vector<std::string> warnings;
  parse_config("allow kernel squashfs = no\nallow kernel extfs = no\nallow ipc ns = yes\n", "singularity.conf",
               &warnings);
  EXPECT_TRUE(warnings.empty());
}

TEST(ConfigFile, UnreadableFileIsAnErrorNamingIt) {
  try {
    read_config("/nonexistent/capsa.conf", nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/capsa.conf"), std::string::npos) << e.what();
  }
}

TEST(Directives, MemorySizes) {
  EXPECT_EQ(memory_size_bytes("1G"), 1ULL << 30);
  EXPECT_EQ(memory_size_bytes("500M"), 500ULL << 20);
  EXPECT_EQ(memory_size_bytes("2048K"), 2048ULL << 10);
  EXPECT_EQ(memory_size_bytes("4096"), 4096ULL);
  EXPECT_THROW(memory_size_bytes("1T"), FormatError);
  EXPECT_THROW(memory_size_bytes("M"), FormatError);
  EXPECT_THROW(memory_size_bytes("99999999999999999999G"), FormatError);
}

}  // namespace
}  // namespace capsa::config
