// `build --json`: Apptainer's JSON form of a definition (pkg/build/types/definition.go)
// read into the same stages as the text form.
#include "build/definition_json.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa::build {
namespace {

ParseResult parse_json(const std::string& json, std::map<std::string, std::string> args = {}) {
  ParseOptions options;
  options.file_name = "recipe.json";
  options.build_args = std::move(args);
  return parse_definition_json(json, options);
}

std::string error_of(const std::string& json) {
  try {
    parse_json(json);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

// As Apptainer's parser writes it (its testdata_good/docker/docker.json, shortened),
// with SCIF apps in customData and appOrder.
constexpr const char* kApptainerJson = R"({
  "header": {"bootstrap": "docker", "from": "busybox:1.36", "includecmd": "yes"},
  "imageData": {
    "metadata": null,
    "labels": {"Maintainer": "Eduardo", "Version": "v1.0"},
    "imageScripts": {
      "help": {"args": "", "script": "Hello Help!\n"},
      "environment": {"args": "", "script": "    VADER=badguy\n    export VADER\n"},
      "runScript": {"args": "", "script": "    exec echo \"$@\"\n"},
      "test": {"args": "", "script": "    test -f /opt/mock2.txt\n"},
      "startScript": {"args": "", "script": ""}
    }
  },
  "buildData": {
    "files": [{"args": "", "files": [{"source": "mock1.txt", "destination": ""},
                                     {"source": "my file.txt", "destination": "/opt"}]}],
    "buildScripts": {
      "pre": {"args": "", "script": ""},
      "setup": {"args": "", "script": "    touch ${APPTAINER_ROOTFS}/mock.txt\n"},
      "post": {"args": "-c /bin/bash", "script": "    echo {{ WHO }} > /who\n"},
      "test": {"args": "", "script": "    test -f /opt/mock2.txt\n"},
      "arguments": {"args": "", "script": "    WHO=world\n"}
    }
  },
  "customData": {
    "appinstall foo": "    touch filefoo.exec\n",
    "apprun foo": "    echo RUNNING FOO\n",
    "applabels bar": "    HELLOTHISIS bar\n",
    "appinstall bar": "    touch filebar.exec\n"
  },
  "raw": "aWdub3JlZA==",
  "fullraw": "aWdub3JlZA==",
  "appOrder": ["bar", "foo"]
})";

TEST(DefinitionJson, ApptainersJsonFormGivesTheStagesItsTextFormGives) {
  ParseResult parsed = parse_json(kApptainerJson, {{"WHO", "capsa"}});
  ASSERT_EQ(parsed.definition.stages.size(), 1u);
  const Stage& s = parsed.definition.stages[0];
  EXPECT_EQ(s.bootstrap(), "docker");
  EXPECT_EQ(s.get("from"), "busybox:1.36");
  EXPECT_EQ(s.get("includecmd"), "yes");
  ASSERT_EQ(s.labels.size(), 2u);
  EXPECT_EQ(s.labels[0], (std::pair<std::string, std::string>{"Maintainer", "Eduardo"}));
  EXPECT_EQ(s.labels[1], (std::pair<std::string, std::string>{"Version", "v1.0"}));
  EXPECT_EQ(s.help.body, "Hello Help!\n");
  EXPECT_EQ(s.environment.body, "    VADER=badguy\n    export VADER\n");
  EXPECT_EQ(s.runscript.body, "    exec echo \"$@\"\n");
  EXPECT_EQ(s.test.body, "    test -f /opt/mock2.txt\n");
  EXPECT_FALSE(s.startscript.present);
  EXPECT_FALSE(s.pre.present);
  EXPECT_EQ(s.setup.body, "    touch ${APPTAINER_ROOTFS}/mock.txt\n");
  EXPECT_EQ(s.post.args, "-c /bin/bash");
  EXPECT_EQ(s.post.body, "    echo capsa > /who\n") << "--build-arg fills {{ WHO }}";
  EXPECT_EQ(s.arguments.at("WHO"), "world");
  ASSERT_EQ(s.files.size(), 1u);
  ASSERT_EQ(s.files[0].copies.size(), 2u);
  EXPECT_EQ(s.files[0].copies[0].source, "mock1.txt");
  EXPECT_EQ(s.files[0].copies[0].destination, "mock1.txt");
  EXPECT_EQ(s.files[0].copies[1].source, "my file.txt");
  EXPECT_EQ(s.files[0].copies[1].destination, "/opt");
  ASSERT_EQ(s.apps.size(), 2u);
  EXPECT_EQ(s.apps[0].name, "bar") << "appOrder decides";
  EXPECT_EQ(s.apps[0].install.body, "    touch filebar.exec\n");
  EXPECT_EQ(s.apps[0].labels.at(0), (std::pair<std::string, std::string>{"HELLOTHISIS", "bar"}));
  EXPECT_EQ(s.apps[1].name, "foo");
  EXPECT_EQ(s.apps[1].run.body, "    echo RUNNING FOO\n");

  // The text form, which the image keeps, parses to the same stage again.
  const std::string text = definition_text_from_json(kApptainerJson, "recipe.json");
  ParseOptions again;
  again.build_args = {{"WHO", "capsa"}};
  const Stage t = parse_definition(text, again).definition.stages.at(0);
  EXPECT_EQ(t.post.body, s.post.body);
  EXPECT_EQ(t.labels, s.labels);
  EXPECT_EQ(text.rfind("bootstrap: docker\n", 0), 0u) << text;
}

TEST(DefinitionJson, AnArrayIsAMultiStageBuild) {
  ParseResult parsed = parse_json(R"([
    {"header": {"bootstrap": "docker", "from": "busybox", "stage": "one"},
     "buildData": {"buildScripts": {"post": {"args": "", "script": "touch /built\n"}}}},
    {"header": {"bootstrap": "docker", "from": "busybox"},
     "buildData": {"files": [{"args": "from one", "files": [{"source": "/built", "destination": "/copied"}]}]}}
  ])");
  ASSERT_EQ(parsed.definition.stages.size(), 2u);
  EXPECT_EQ(parsed.definition.stages[0].name(), "one");
  ASSERT_EQ(parsed.definition.stages[1].files.size(), 1u);
  EXPECT_EQ(parsed.definition.stages[1].files[0].from_stage, "one");
  EXPECT_EQ(parsed.definition.stages[1].files[0].copies.at(0).destination, "/copied");
}

TEST(DefinitionJson, BadJsonIsOneLineNamingTheFileAndTheProblem) {
  for (const auto& [json, expected] : std::vector<std::pair<std::string, std::string>>{
           {"{\"header\": {\"bootstrap\": \"docker\",\n", "recipe.json: not valid JSON ("},
           {"{\"test\"}", "recipe.json: not valid JSON ("},
           {"{\"Key1\": \"Value1\"}", "recipe.json: definition: no \"header\""},
           {"[]", "an empty array"},
           {"42", "expected an object (one stage)"},
           {"{\"header\": {\"from\": \"x\"}}", "definition.header: no \"bootstrap\""},
           {"{\"header\": {\"bootstrap\": 7}}", "definition.header.bootstrap: expected string, found number"},
           {"{\"header\": {\"bootstrap\": \"docker\", \"colour\": \"blue\"}}", "header.colour: unknown header keyword"},
           {"{\"header\": {\"bootstrap\": \"docker\"}, \"buildData\": {\"files\": {}}}",
            "definition.buildData.files: expected array, found object"},
           {"{\"header\": {\"bootstrap\": \"docker\"}, \"imageData\": {\"labels\": {\"a b\": \"c\"}}}",
            "labels.a b: a label name must be one word"},
           {"{\"header\": {\"bootstrap\": \"docker\"}, \"buildData\": {\"buildScripts\": {\"post\": {\"script\": "
            "\"echo\\n%files\\n\"}}}}",
            "buildScripts.post: line \"%files\" would start a new section"},
           {"{\"header\": {\"bootstrap\": \"docker\"}, \"customData\": {\"colour x\": \"y\"}}",
            "customData.colour x: not a SCIF app section"},
           {"{\"header\": {\"bootstrap\": \"docker\", \"from\": \"a\\nb\"}}", "must be one line"},
       }) {
    const std::string error = error_of(json);
    EXPECT_EQ(error.rfind("recipe.json", 0), 0u) << json << ": " << error;
    EXPECT_NE(error.find(expected), std::string::npos) << json << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(DefinitionJson, TextParserErrorsNameTheTextForm) {
  const std::string error = error_of(
      "{\"header\": {\"bootstrap\": \"docker\"}, \"buildData\": {\"buildScripts\": {\"post\": {\"script\": "
      "\"echo {{ NOBODY }}\\n\"}}}}");
  EXPECT_NE(error.find("recipe.json (its text form):"), std::string::npos) << error;
  EXPECT_NE(error.find("NOBODY"), std::string::npos) << error;
}

}  // namespace
}  // namespace capsa::build
