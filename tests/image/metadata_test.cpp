// `capsa inspect` data and output: read from the squashfs of real SIFs (no mount)
// and printed the way `apptainer inspect` prints it (cmd/internal/cli/inspect.go).
#include "image/metadata.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "image/directory_files.hpp"
#include "image/squashfs_files.hpp"
#include "sif/image.hpp"
#include "sif/writer.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::image {
namespace {

using test::TempDir;

std::string busybox() { return test::sif_fixture("real/busybox_amd64.sif"); }
std::string fixture_sif() { return test::built_fixtures() + "/inspect-image/inspect.sif"; }

InspectOptions flags(std::initializer_list<bool InspectOptions::*> set) {
  InspectOptions o;
  for (auto flag : set) o.*flag = true;
  return o;
}

std::string inspect(const std::string& path, const InspectOptions& options) {
  sif::Image image = sif::Image::open(path);
  return format_inspect(read_metadata(image, options), options);
}

// Go's json.Marshal output is compact; drop the whitespace MarshalIndent adds
// (outside strings only) so both can be compared byte for byte.
std::string minify(const std::string& json) {
  std::string out;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\') out += json[++i];
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c != ' ' && c != '\t' && c != '\n') {
      out += c;
    }
  }
  return out;
}

template <typename Body>
void expect_format_error(Body&& body, const std::string& expected) {
  try {
    body();
    ADD_FAILURE() << "no FormatError; expected \"" << expected << "\"";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// A SIF whose only object is a primary partition of type `fs` holding `data`.
std::string sif_with_primary(const TempDir& dir, const std::string& name, sif::FsType fs, const std::string& data) {
  std::string path = dir / name;
  sif::ObjectInput part = sif::partition_input(dir.write(name + ".part", data), fs, sif::PartType::PrimSys, "amd64");
  sif::create(path, sif::CreateOptions{}, {part});
  return path;
}

TEST(Inspect, BusyboxAllMatchesTheImagesOwnInspectMetadata) {
  // Singularity 3.8.1 stored `inspect --all --json` of this very image as a SIF object;
  // reading the squashfs must give the same document, byte for byte once compacted.
  sif::Image image = sif::Image::open(busybox());
  std::string stored;
  for (const sif::Descriptor& d : image.objects())
    if (d.name_text() == "inspect-metadata.json") stored = image.read_object(d);
  ASSERT_FALSE(stored.empty());
  InspectOptions all = flags({&InspectOptions::all});
  Metadata m = read_metadata(image, all);
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_EQ(minify(format_inspect(m, all)), stored);
}

TEST(Inspect, BusyboxPlainSections) {
  EXPECT_EQ(inspect(busybox(), {}),
            "org.label-schema.build-arch: amd64\n"
            "org.label-schema.build-date: Monday_2_August_2021_14:9:36_CDT\n"
            "org.label-schema.schema-version: 1.0\n"
            "org.label-schema.usage.singularity.deffile.bootstrap: docker\n"
            "org.label-schema.usage.singularity.deffile.from: busybox:1.33.1\n"
            "org.label-schema.usage.singularity.version: 3.8.1\n");
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::labels})), inspect(busybox(), {}));
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::deffile})), "BootStrap: docker\nFrom: busybox:1.33.1\n");
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::startscript})), "#!/bin/sh\n");
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::environment})),
            "=== /.singularity.d/env/10-docker2singularity.sh ===\n"
            "#!/bin/sh\n"
            "export PATH=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\n"
            "\n"
            "=== /.singularity.d/env/90-environment.sh ===\n"
            "#!/bin/sh\n"
            "# Custom environment shell code should follow\n"
            "\n");
  // The image has neither a test script nor a help file: nothing is printed.
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::test, &InspectOptions::helpfile})), "");
  std::string runscript = inspect(busybox(), flags({&InspectOptions::runscript}));
  EXPECT_EQ(runscript.size(), 1076u);  // the 1077-byte file, both trailing newlines trimmed, one printed
  EXPECT_TRUE(runscript.starts_with("#!/bin/sh\nOCI_ENTRYPOINT=''\nOCI_CMD='\"sh\"'\n"));
  EXPECT_TRUE(runscript.ends_with("\nexec \"$@\"\n"));
  // Sections come in Apptainer's fixed order, whatever the order of the flags.
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::startscript, &InspectOptions::deffile})),
            "BootStrap: docker\nFrom: busybox:1.33.1\n#!/bin/sh\n");
}

TEST(Inspect, BusyboxJsonLabelsByDefault) {
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::json})),
            "{\n"
            "\t\"data\": {\n"
            "\t\t\"attributes\": {\n"
            "\t\t\t\"labels\": {\n"
            "\t\t\t\t\"org.label-schema.build-arch\": \"amd64\",\n"
            "\t\t\t\t\"org.label-schema.build-date\": \"Monday_2_August_2021_14:9:36_CDT\",\n"
            "\t\t\t\t\"org.label-schema.schema-version\": \"1.0\",\n"
            "\t\t\t\t\"org.label-schema.usage.singularity.deffile.bootstrap\": \"docker\",\n"
            "\t\t\t\t\"org.label-schema.usage.singularity.deffile.from\": \"busybox:1.33.1\",\n"
            "\t\t\t\t\"org.label-schema.usage.singularity.version\": \"3.8.1\"\n"
            "\t\t\t}\n"
            "\t\t}\n"
            "\t},\n"
            "\t\"type\": \"container\"\n"
            "}\n");
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::json, &InspectOptions::startscript})),
            "{\n\t\"data\": {\n\t\t\"attributes\": {\n\t\t\t\"startscript\": \"#!/bin/sh\"\n\t\t}\n\t},\n"
            "\t\"type\": \"container\"\n}\n");
}

TEST(Inspect, FixtureAllAsJson) {
  // Only 10-docker*.sh and 9*-environment.sh are shown, and only regular files (the
  // dangling 95-… link and the 92-… directory are skipped); 91-… is a symlink.
  EXPECT_EQ(inspect(fixture_sif(), flags({&InspectOptions::all})), R"json({
	"data": {
		"attributes": {
			"environment": {
				"/.singularity.d/env/10-docker2singularity.sh": "#!/bin/sh\nexport PATH=\"/usr/local/bin:/usr/bin:/bin\"",
				"/.singularity.d/env/90-environment.sh": "#!/bin/sh\n# Custom environment shell code should follow\n\nexport FOO=\"bar\"",
				"/.singularity.d/env/91-environment.sh": "export HELLO=\"world\""
			},
			"labels": {
				"MAINTAINER": "capsa \u003ctests@example.org\u003e",
				"café": "crème",
				"empty": "",
				"org.label-schema.schema-version": "1.0"
			},
			"runscript": "#!/bin/sh\n\necho \"run \u003c\u0026\u003e me\"\nexec \"$@\"",
			"test": "#!/bin/sh\n\ntest -d /\ntest -d /etc",
			"helpfile": "Inspect fixture.\nSecond line of help.",
			"deffile": "bootstrap: localimage\nfrom: base.sif\n\n%runscript\n    echo \"run \u003c\u0026\u003e me\"",
			"startscript": "#!/bin/sh\n\nexec sleep infinity"
		}
	},
	"type": "container"
}
)json");
}

TEST(Inspect, FixturePlainSections) {
  InspectOptions everything = flags({&InspectOptions::labels, &InspectOptions::deffile, &InspectOptions::runscript,
                                     &InspectOptions::startscript, &InspectOptions::test,
                                     &InspectOptions::environment, &InspectOptions::helpfile});
  EXPECT_EQ(inspect(fixture_sif(), everything),
            "bootstrap: localimage\nfrom: base.sif\n\n%runscript\n    echo \"run <&> me\"\n"
            "#!/bin/sh\n\necho \"run <&> me\"\nexec \"$@\"\n"
            "#!/bin/sh\n\nexec sleep infinity\n"
            "#!/bin/sh\n\ntest -d /\ntest -d /etc\n"
            "Inspect fixture.\nSecond line of help.\n"
            "=== /.singularity.d/env/10-docker2singularity.sh ===\n#!/bin/sh\nexport PATH=\"/usr/local/bin:/usr/bin:/bin\"\n\n"
            "=== /.singularity.d/env/90-environment.sh ===\n#!/bin/sh\n# Custom environment shell code should follow\n\n"
            "export FOO=\"bar\"\n\n"
            "=== /.singularity.d/env/91-environment.sh ===\nexport HELLO=\"world\"\n\n"
            "MAINTAINER: capsa <tests@example.org>\n"
            "caf\xC3\xA9: cr\xC3\xA8me\n"
            "empty: \n"
            "org.label-schema.schema-version: 1.0\n");
  EXPECT_EQ(inspect(fixture_sif(), flags({&InspectOptions::helpfile})), "Inspect fixture.\nSecond line of help.\n");
}

// A sandbox with two SCIF apps, as Apptainer's build lays them out: --list-apps, --app
// and --all print what Apptainer's inspect prints (pkg/inspect AppAttributes).
TEST(Inspect, ScifAppsListedAndInspectedOneByOne) {
  TempDir dir;
  auto put = [&](const std::string& name, const std::string& content) {
    std::filesystem::create_directories(std::filesystem::path(dir / name).parent_path());
    dir.write(name, content);
  };
  put("root/.singularity.d/labels.json", "{\"image\": \"label\"}");
  put("root/scif/apps/b/scif/labels.json", "{\n\t\"SCIF_APP_NAME\": \"b\"\n}");
  put("root/scif/apps/b/scif/runscript", "#!/bin/sh\n\necho b\n\n");
  put("root/scif/apps/b/scif/env/01-base.sh", "SCIF_APPNAME=b\n");
  put("root/scif/apps/b/scif/env/90-environment.sh", "export B=1\n");
  put("root/scif/apps/a/scif/runscript.help", "Help of a.\n");
  put("root/scif/apps/not-an-app/bin/tool", "");  // no scif/: not an app
  const DirectoryFiles root(dir / "root");
  auto show = [&](const InspectOptions& o) { return format_inspect(read_metadata(root, o), o); };

  InspectOptions list;
  list.list_apps = true;
  EXPECT_EQ(show(list), "a\nb\n");
  list.json = true;
  EXPECT_EQ(show(list),
            "{\n\t\"data\": {\n\t\t\"attributes\": {\n\t\t\t\"apps\": {\n\t\t\t\t\"a\": {},\n"
            "\t\t\t\t\"b\": {}\n\t\t\t}\n\t\t}\n\t},\n\t\"type\": \"container\"\n}\n");

  InspectOptions app;
  app.app = "b";
  EXPECT_EQ(show(app), "SCIF_APP_NAME: b\n");  // the app's labels, not the image's
  app.runscript = app.environment = true;
  EXPECT_EQ(show(app), "#!/bin/sh\n\necho b\n=== /scif/apps/b/scif/env/90-environment.sh ===\nexport B=1\n\n");
  app.json = true;
  EXPECT_EQ(show(app),
            "{\n\t\"data\": {\n\t\t\"attributes\": {\n\t\t\t\"apps\": {\n\t\t\t\t\"b\": {\n"
            "\t\t\t\t\t\"environment\": {\n"
            "\t\t\t\t\t\t\"/scif/apps/b/scif/env/90-environment.sh\": \"export B=1\"\n\t\t\t\t\t},\n"
            "\t\t\t\t\t\"runscript\": \"#!/bin/sh\\n\\necho b\"\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t},\n"
            "\t\"type\": \"container\"\n}\n");

  InspectOptions all;
  all.all = true;
  std::string everything = show(all);
  EXPECT_NE(everything.find("\"helpfile\": \"Help of a.\""), std::string::npos) << everything;
  EXPECT_NE(everything.find("\"image\": \"label\""), std::string::npos) << everything;

  InspectOptions unknown;
  unknown.app = "c";
  try {
    read_metadata(root, unknown);
    ADD_FAILURE() << "an unknown app was inspected";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "no SCIF app \"c\" in " + (dir / "root") + " (its apps: a, b)");
  }
}

TEST(Inspect, ImageWithoutMetadataPrintsAnEmptyDocument) {
  // two-groups.sif: squashfs primary partition (group 1) with only hello.txt; its
  // Ext3 partition in group 2 is not the primary one and is not looked at.
  const std::string path = test::sif_fixture("images/two-groups.sif");
  EXPECT_EQ(inspect(path, {}), "");
  EXPECT_EQ(inspect(path, flags({&InspectOptions::all})),
            "{\n\t\"data\": {\n\t\t\"attributes\": {}\n\t},\n\t\"type\": \"container\"\n}\n");
}

TEST(Inspect, DeffileFallsBackToTheSifObject) {
  TempDir dir;
  std::string path = dir / "deffile.sif";
  sif::ObjectInput def;
  def.type = sif::DataType::Deffile;
  def.data = "bootstrap: scratch\n\n";
  sif::ObjectInput part = sif::partition_input(test::sif_fixture("input/root.squashfs"), sif::FsType::Squashfs,
                                               sif::PartType::PrimSys, "amd64");
  sif::create(path, sif::CreateOptions{}, {def, part});
  EXPECT_EQ(inspect(path, flags({&InspectOptions::deffile})), "bootstrap: scratch\n");
  // The image's own /.singularity.d/Singularity wins (busybox has both, equal).
  EXPECT_EQ(inspect(busybox(), flags({&InspectOptions::deffile})), "BootStrap: docker\nFrom: busybox:1.33.1\n");
}

TEST(Inspect, LabelsApptainerOnlyWarnsAbout) {
  const std::string dir = test::built_fixtures() + "/inspect-image/";
  {
    UniqueFd fd = open_file(dir + "bad-labels.squashfs", O_RDONLY);
    SquashfsFiles root(squashfs::Reader(fd.get(), 0, file_size(fd.get()), "bad-labels.squashfs"));
    Metadata m = read_metadata(root, {});
    EXPECT_TRUE(m.labels.empty());
    ASSERT_EQ(m.warnings.size(), 1u);
    EXPECT_TRUE(m.warnings[0].starts_with("bad-labels.squashfs: /.singularity.d/labels.json: unable to parse labels"))
        << m.warnings[0];
    EXPECT_EQ(format_inspect(m, {}), "");
  }
  {
    // As Go's json.Unmarshal into map[string]string: other types keep their key, empty.
    UniqueFd fd = open_file(dir + "typed-labels.squashfs", O_RDONLY);
    SquashfsFiles root(squashfs::Reader(fd.get(), 0, file_size(fd.get()), "typed-labels.squashfs"));
    Metadata m = read_metadata(root, {});
    EXPECT_EQ(format_inspect(m, {}), "n: \no: \ns: text\nz: \n");
    EXPECT_EQ(m.warnings.size(), 2u);  // n and o; null is no error for Go either
  }
}

TEST(InspectBadInput, NoPrimaryPartition) {
  const std::string path = test::sif_fixture("images/one-object-generic-json.sif");
  expect_format_error([&] { inspect(path, {}); }, path + ": no primary system partition");
}

TEST(InspectBadInput, PrimaryPartitionIsNotSquashfs) {
  TempDir dir;
  std::string ext3 = sif_with_primary(dir, "ext3.sif", sif::FsType::Ext3,
                                      test::read_file(test::sif_fixture("input/root.ext3")));
  expect_format_error([&] { inspect(ext3, {}); }, ext3 + ": primary partition (object 1) is Ext3, not squashfs");
  std::string raw = sif_with_primary(dir, "raw.sif", sif::FsType::Raw, "raw bytes");
  expect_format_error([&] { inspect(raw, {}); }, raw + ": primary partition (object 1) is Raw, not squashfs");
}

TEST(InspectBadInput, SquashfsPartitionWithoutSquashfs) {
  TempDir dir;
  std::string ext3 = sif_with_primary(dir, "mislabelled.sif", sif::FsType::Squashfs,
                                      test::read_file(test::sif_fixture("input/root.ext3")));
  expect_format_error([&] { inspect(ext3, {}); },
                      ext3 + ": primary partition (object 1) is marked Squashfs but does not start with the "
                             "squashfs magic \"hsqs\"");
  std::string tiny = sif_with_primary(dir, "tiny.sif", sif::FsType::Squashfs, "hs");
  expect_format_error([&] { inspect(tiny, {}); }, "does not start with the squashfs magic");
  // Legacy signed fixtures carry a 4-byte dummy "partition".
  const std::string legacy = test::sif_fixture("images/one-group-signed-legacy.sif");
  expect_format_error([&] { inspect(legacy, {}); }, legacy + ": primary partition (object 2) is marked Squashfs");
}

TEST(InspectBadInput, CorruptOrTruncatedSquashfs) {
  TempDir dir;
  std::string image = test::read_file(test::sif_fixture("input/root.squashfs"));
  std::string cut = sif_with_primary(dir, "cut.sif", sif::FsType::Squashfs, image.substr(0, 200));
  expect_format_error([&] { inspect(cut, {}); },
                      cut + ": primary partition (object 1): squashfs image is truncated (super block says 249 "
                            "bytes, only 200 present)");
  std::string garbage = "hsqs" + std::string(4092, '\x5a');
  std::string bad = sif_with_primary(dir, "garbage.sif", sif::FsType::Squashfs, garbage);
  expect_format_error([&] { inspect(bad, {}); }, bad + ": primary partition (object 1): squashfs super block: ");
}

}  // namespace
}  // namespace capsa::image
