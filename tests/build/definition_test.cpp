// The definition-file parser: every header and section rule of docs/build.md.
#include "build/definition.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa::build {
namespace {

Definition parse(const std::string& text, std::map<std::string, std::string> args = {}) {
  ParseOptions options;
  options.file_name = "test.def";
  options.build_args = std::move(args);
  return parse_definition(text, options).definition;
}

// The message of the FormatError that parsing `text` throws ("" when it parses).
std::string error_of(const std::string& text, std::map<std::string, std::string> args = {}) {
  try {
    parse(text, std::move(args));
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

TEST(Definition, HeaderKeysAreCaseInsensitiveAndTrimmed) {
  Definition def = parse("BootStrap:   docker\nFROM: debian:bookworm  \nstage: build\n");
  ASSERT_EQ(def.stages.size(), 1u);
  EXPECT_EQ(def.stages[0].bootstrap(), "docker");
  EXPECT_EQ(def.stages[0].get("from"), "debian:bookworm");
  EXPECT_EQ(def.stages[0].name(), "build");
}

TEST(Definition, CommentsAndBlankLinesBeforeTheHeaderAreAllowed) {
  Definition def = parse("# a recipe\n\nBootstrap: scratch\n");
  EXPECT_EQ(def.stages[0].bootstrap(), "scratch");
}

TEST(Definition, EveryApptainerHeaderKeyIsAccepted) {
  Definition def = parse(
      "Bootstrap: debootstrap\nOSVersion: bookworm\nMirrorURL: http://deb.debian.org/debian\n"
      "Include: less\nRegistry: r.example\nNamespace: ns\nFingerprints: ABC\nOtherURL1: x\nSetOpt: a\n");
  EXPECT_EQ(def.stages[0].get("osversion"), "bookworm");
  EXPECT_EQ(def.stages[0].get("otherurl1"), "x");
}

TEST(Definition, UnknownHeaderKeyIsAnErrorWithFileAndLine) {
  std::string error = error_of("Bootstrap: docker\nFrom: a\nColour: blue\n");
  EXPECT_NE(error.find("test.def:3:"), std::string::npos) << error;
  EXPECT_NE(error.find("unknown header keyword \"Colour\""), std::string::npos) << error;
}

TEST(Definition, BootstrapMustComeFirst) {
  std::string error = error_of("From: debian\nBootstrap: docker\n");
  EXPECT_NE(error.find("test.def:1:"), std::string::npos) << error;
  EXPECT_NE(error.find("Bootstrap"), std::string::npos) << error;
}

TEST(Definition, MissingHeaderIsAnError) {
  std::string error = error_of("%post\n  echo hi\n");
  EXPECT_NE(error.find("test.def:1:"), std::string::npos) << error;
  EXPECT_NE(error.find("expected \"Bootstrap: AGENT\""), std::string::npos) << error;
}

TEST(Definition, HeaderLineWithoutColonIsAnError) {
  std::string error = error_of("Bootstrap: docker\nFrom debian\n");
  EXPECT_NE(error.find("test.def:2:"), std::string::npos) << error;
  EXPECT_NE(error.find("Key: value"), std::string::npos) << error;
}

TEST(Definition, UnknownSectionIsAnErrorNamingTheValidOnes) {
  std::string error = error_of("Bootstrap: scratch\n%post\ntrue\n%install\nmake\n");
  EXPECT_NE(error.find("test.def:4:"), std::string::npos) << error;
  EXPECT_NE(error.find("unknown section %install"), std::string::npos) << error;
  EXPECT_NE(error.find("%post"), std::string::npos) << error;
}

TEST(Definition, ScifAppSectionsGroupByAppInTheOrderTheFileNamesThem) {
  Definition def = parse(
      "Bootstrap: scratch\n"
      "%apprun second\n    echo two\n"
      "%appinstall first\n    make\n"
      "%applabels first\n    Author someone\n    Version 1\n"
      "%appfiles first\n    src.txt\n    /host/a.txt data/a.txt\n"
      "%appenv first\n    export X=1\n"
      "%apptest first\n    true\n"
      "%apphelp first\n    Help text\n"
      "%appstart first\n    sleep 1\n"
      "%appinstall first\n    make install\n");
  const auto& apps = def.stages[0].apps;
  ASSERT_EQ(apps.size(), 2u);
  EXPECT_EQ(apps[0].name, "second");
  EXPECT_EQ(apps[0].run.body, "    echo two\n");
  EXPECT_EQ(apps[0].line, 2);
  EXPECT_EQ(apps[1].name, "first");
  EXPECT_EQ(apps[1].install.body, "    make\n    make install\n");  // repeated: concatenated
  ASSERT_EQ(apps[1].labels.size(), 2u);
  EXPECT_EQ(apps[1].labels[0], (std::pair<std::string, std::string>{"Author", "someone"}));
  ASSERT_EQ(apps[1].files.size(), 2u);
  EXPECT_EQ(apps[1].files[0].destination, "src.txt");
  EXPECT_EQ(apps[1].files[1].source, "/host/a.txt");
  EXPECT_EQ(apps[1].files[1].destination, "data/a.txt");
  EXPECT_EQ(apps[1].env.body, "    export X=1\n");
  EXPECT_EQ(apps[1].test.body, "    true\n");
  EXPECT_EQ(apps[1].help.body, "    Help text\n");
  EXPECT_TRUE(apps[1].start.present);
  EXPECT_FALSE(def.stages[0].post.present);
}

TEST(Definition, ScifAppSectionsNeedAPlainAppName) {
  std::string missing = error_of("Bootstrap: scratch\n%appinstall\ntrue\n");
  EXPECT_NE(missing.find("test.def:2: %appinstall needs the app's name"), std::string::npos) << missing;
  std::string escaping = error_of("Bootstrap: scratch\n%apprun ../etc\ntrue\n");
  EXPECT_NE(escaping.find("test.def:2: SCIF app name \"../etc\" is not a plain name"), std::string::npos) << escaping;
}

TEST(Definition, SectionNamesAreCaseInsensitive) {
  Definition def = parse("Bootstrap: scratch\n%POST\necho hi\n");
  EXPECT_EQ(def.stages[0].post.body, "echo hi\n");
}

// Found by fuzz_definition: a line ending in several CRs lost one per parse, so the stage
// text saved in the image parsed to a different %post.
TEST(Definition, StageTextParsesToTheSameStageWhateverTheLineEndings) {
  Definition def = parse("Bootstrap: docker\r\nFrom: debian\r\n%post\r\necho hi\r\r\r\n");
  EXPECT_EQ(def.stages[0].post.body, "echo hi\n");
  Definition again = parse(def.stages[0].text);
  EXPECT_EQ(again.stages[0].post.body, def.stages[0].post.body);
  EXPECT_EQ(again.stages[0].header, def.stages[0].header);
}

TEST(Definition, ScriptSectionsKeepTheirBodyAndArguments) {
  Definition def = parse(
      "Bootstrap: scratch\n"
      "%setup\n  touch $APPTAINER_ROOTFS/x\n"
      "%post -c /bin/bash\n  set -o pipefail\n\n  echo a | cat\n\n\n"
      "%environment\n  export A=1\n"
      "%runscript\n  exec echo \"$@\"\n"
      "%startscript\n  sleep 1\n"
      "%test\n  test -f /x\n"
      "%help\n  Some help.\n");
  const Stage& s = def.stages[0];
  EXPECT_TRUE(s.setup.present);
  EXPECT_EQ(s.setup.body, "  touch $APPTAINER_ROOTFS/x\n");
  EXPECT_EQ(s.post.args, "-c /bin/bash");
  EXPECT_EQ(s.post.body, "  set -o pipefail\n\n  echo a | cat\n");  // trailing blank lines dropped
  EXPECT_EQ(s.post.line, 4);
  EXPECT_EQ(s.environment.body, "  export A=1\n");
  EXPECT_EQ(s.runscript.body, "  exec echo \"$@\"\n");
  EXPECT_EQ(s.startscript.body, "  sleep 1\n");
  EXPECT_EQ(s.test.body, "  test -f /x\n");
  EXPECT_EQ(s.help.body, "  Some help.\n");
  EXPECT_FALSE(s.pre.present);
}

TEST(Definition, RepeatedSectionsAreConcatenated) {
  Definition def = parse("Bootstrap: scratch\n%post\necho one\n%labels\nA 1\n%post\necho two\n");
  EXPECT_EQ(def.stages[0].post.body, "echo one\necho two\n");
}

TEST(Definition, LabelsAreKeyAndRestOfLine) {
  Definition def = parse("Bootstrap: scratch\n%labels\n  Author  Jane Doe\n# comment\n  Version 1.0\n  Empty\n");
  const auto& labels = def.stages[0].labels;
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[0], (std::pair<std::string, std::string>{"Author", "Jane Doe"}));
  EXPECT_EQ(labels[1], (std::pair<std::string, std::string>{"Version", "1.0"}));
  EXPECT_EQ(labels[2], (std::pair<std::string, std::string>{"Empty", ""}));
}

TEST(Definition, FilesLinesAreSourceAndOptionalDestination) {
  Definition def = parse("Bootstrap: scratch\n%files\n  /etc/hostname\n  a.txt /opt/a.txt\n  'with space' /b\n");
  const auto& copies = def.stages[0].files.at(0).copies;
  ASSERT_EQ(copies.size(), 3u);
  EXPECT_EQ(copies[0].source, "/etc/hostname");
  EXPECT_EQ(copies[0].destination, "/etc/hostname");
  EXPECT_EQ(copies[1].destination, "/opt/a.txt");
  EXPECT_EQ(copies[2].source, "with space");
  EXPECT_EQ(copies[2].line, 5);
}

TEST(Definition, FilesLineWithThreePathsIsAnError) {
  std::string error = error_of("Bootstrap: scratch\n%files\n  a b c\n");
  EXPECT_NE(error.find("test.def:3:"), std::string::npos) << error;
  EXPECT_NE(error.find("SOURCE [DESTINATION]"), std::string::npos) << error;
}

TEST(Definition, MultiStageFilesFromAnEarlierStage) {
  Definition def = parse(
      "Bootstrap: docker\nFrom: debian\nStage: build\n%post\nmake\n"
      "\nBootstrap: docker\nFrom: busybox\nStage: final\n%files from build\n  /out/prog /usr/bin/prog\n");
  ASSERT_EQ(def.stages.size(), 2u);
  EXPECT_EQ(def.stages[0].name(), "build");
  EXPECT_EQ(def.stages[1].get("from"), "busybox");
  EXPECT_EQ(def.stages[1].line, 7);
  ASSERT_EQ(def.stages[1].files.size(), 1u);
  EXPECT_EQ(def.stages[1].files[0].from_stage, "build");
  EXPECT_EQ(def.stages[1].files[0].copies[0].destination, "/usr/bin/prog");
  EXPECT_EQ(def.stages[0].text, "Bootstrap: docker\nFrom: debian\nStage: build\n%post\nmake\n\n");
}

TEST(Definition, FilesFromAnUnknownOrLaterStageIsAnError) {
  std::string error = error_of("Bootstrap: scratch\nStage: one\n%files from two\n a\nBootstrap: scratch\nStage: two\n");
  EXPECT_NE(error.find("test.def:3:"), std::string::npos) << error;
  EXPECT_NE(error.find("\"two\""), std::string::npos) << error;
}

TEST(Definition, BadFilesArgumentsAreAnError) {
  EXPECT_NE(error_of("Bootstrap: scratch\n%files to x\n a\n").find("from STAGE"), std::string::npos);
}

TEST(Definition, DuplicateStageNamesAreAnError) {
  EXPECT_NE(error_of("Bootstrap: scratch\nStage: a\nBootstrap: scratch\nStage: a\n").find("second stage"),
            std::string::npos);
}

TEST(Definition, ArgumentsDefaultsFillTemplatesEverywhere) {
  Definition def = parse(
      "Bootstrap: docker\nFrom: debian:{{ RELEASE }}\n%arguments\n  RELEASE=bookworm\n  PKG=\"less\"\n"
      "%post\n  apt-get install -y {{PKG}}\n");
  EXPECT_EQ(def.stages[0].get("from"), "debian:bookworm");
  EXPECT_EQ(def.stages[0].post.body, "  apt-get install -y less\n");
  EXPECT_EQ(def.stages[0].arguments.at("PKG"), "less");
}

TEST(Definition, BuildArgsOverrideDefaults) {
  Definition def = parse("Bootstrap: docker\nFrom: debian:{{ RELEASE }}\n%arguments\nRELEASE=bookworm\n",
                         {{"RELEASE", "trixie"}});
  EXPECT_EQ(def.stages[0].get("from"), "debian:trixie");
  EXPECT_NE(def.text.find("debian:trixie"), std::string::npos);
}

TEST(Definition, UnresolvedTemplateIsAnError) {
  std::string error = error_of("Bootstrap: docker\nFrom: debian\n%post\n echo {{ WHO }}\n");
  EXPECT_NE(error.find("test.def:4:"), std::string::npos) << error;
  EXPECT_NE(error.find("\"WHO\""), std::string::npos) << error;
  EXPECT_NE(error.find("--build-arg"), std::string::npos) << error;
}

TEST(Definition, UnusedBuildArgIsAnErrorUnlessWarned) {
  std::string error = error_of("Bootstrap: scratch\n", {{"X", "1"}});
  EXPECT_NE(error.find("\"X\" is not used"), std::string::npos) << error;
  ParseOptions options;
  options.build_args = {{"X", "1"}};
  options.warn_unused_build_args = true;
  ParseResult result = parse_definition("Bootstrap: scratch\n", options);
  ASSERT_EQ(result.warnings.size(), 1u);
}

TEST(Definition, BadArgumentsLineIsAnError) {
  std::string error = error_of("Bootstrap: scratch\n%arguments\n  NOVALUE\n");
  EXPECT_NE(error.find("test.def:3:"), std::string::npos) << error;
  EXPECT_NE(error.find("KEY=DEFAULT"), std::string::npos) << error;
}

TEST(Definition, PercentInsideAWordIsNotASection) {
  Definition def = parse("Bootstrap: scratch\n%post\nprintf '%s\\n' x\n  %notasection\n");
  EXPECT_EQ(def.stages[0].post.body, "printf '%s\\n' x\n  %notasection\n");
}

TEST(Definition, BuildArgFileAndFlag) {
  auto args = parse_build_arg_file("# c\nA=1\n B = \"two words\" \n", "args.txt");
  EXPECT_EQ(args.at("A"), "1");
  EXPECT_EQ(args.at("B"), "two words");
  EXPECT_THROW(parse_build_arg_file("novalue\n", "args.txt"), FormatError);
  EXPECT_EQ(parse_build_arg("K=a=b"), (std::pair<std::string, std::string>{"K", "a=b"}));
  EXPECT_THROW(parse_build_arg("=x"), FormatError);
}

TEST(Definition, CarriageReturnsAreIgnored) {
  Definition def = parse("Bootstrap: docker\r\nFrom: debian\r\n%post\r\necho hi\r\n");
  EXPECT_EQ(def.stages[0].get("from"), "debian");
  EXPECT_EQ(def.stages[0].post.body, "echo hi\n");
}

}  // namespace
}  // namespace capsa::build
