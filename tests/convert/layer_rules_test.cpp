// OCI layer application rules (image-spec layer.md; reference notes B7), proved on
// real tar layers converted to real squashfs images.
#include <sys/stat.h>

#include "convert_fixture.hpp"
#include "support/process.hpp"

namespace capsa::convert::test {
namespace {

using Names = std::map<std::string, std::string>;

bool has(const Names& d, const std::string& path) { return d.count(path) != 0; }

TEST_F(ConvertTest, WhiteoutHidesLowerLayerFile) {
  auto l1 = layer({{"a", "dir"}, {"a/x", "file", "x"}, {"a/y", "file", "y"}});
  auto l2 = layer({{"a/.wh.x", "file"}});
  convert({l1, l2});
  Names d = describe();
  EXPECT_FALSE(has(d, "a/x"));
  EXPECT_EQ(read("/a/y"), "y");
  for (const auto& [path, line] : d) EXPECT_EQ(path.find(".wh."), std::string::npos) << path;
}

TEST_F(ConvertTest, WhiteoutDoesNotHideItsOwnLayer) {
  auto l1 = layer({{"f", "file", "old"}, {"g", "file", "old"}});
  auto l2 = layer({{".wh.f"}, {"f", "file", "new"}, {"g", "file", "new"}, {".wh.g"}});
  convert({l1, l2});
  EXPECT_EQ(read("/f"), "new");
  EXPECT_EQ(read("/g"), "new");
}

TEST_F(ConvertTest, OpaqueDirectoryHidesLowerChildrenWhereverItAppearsInTheTar) {
  auto l1 = layer({{"d", "dir"}, {"d/old", "file", "o"}, {"d/sub", "dir"}, {"d/sub/deep", "file", "o"}});
  auto l2 = layer({{"d", "dir"}, {"d/new", "file", "n"}, {"d/.wh..wh..opq"}});  // marker after the new file
  convert({l1, l2});
  Names d = describe();
  EXPECT_TRUE(has(d, "d/new"));
  EXPECT_FALSE(has(d, "d/old"));
  EXPECT_FALSE(has(d, "d/sub"));
  EXPECT_FALSE(has(d, "d/sub/deep"));
  EXPECT_FALSE(has(d, "d/.wh..wh..opq"));
}

TEST_F(ConvertTest, DirectoryReplacedByFileAndBack) {
  auto l1 = layer({{"d", "dir"}, {"d/x", "file", "x"}});
  auto l2 = layer({{"d", "file", "now a file"}});
  auto l3 = layer({{"d", "dir", "", 0700}, {"d/y", "file", "y"}});
  convert({l1, l2});
  EXPECT_EQ(read("/d"), "now a file");
  convert({l1, l2, l3});
  Names d = describe();
  EXPECT_EQ(d["d"], "dir 0700 0 0");
  EXPECT_EQ(read("/d/y"), "y");
  EXPECT_FALSE(has(d, "d/x"));  // removed with the directory by layer 2
}

TEST_F(ConvertTest, UpperDirectoryKeepsLowerChildrenAndTakesItsOwnAttributes) {
  auto l1 = layer({{"d", "dir", "", 0755, 1, 1}, {"d/x", "file", "x"}});
  auto l2 = layer({{"d", "dir", "", 0750, 2, 2}, {"d/y", "file", "y"}});
  auto l3 = layer({{"d/z", "file", "z"}});  // no entry for d: its attributes stay layer 2's
  convert({l1, l2, l3});
  Names d = describe();
  EXPECT_EQ(d["d"], "dir 0750 2 2");
  EXPECT_TRUE(has(d, "d/x") && has(d, "d/y") && has(d, "d/z"));
}

TEST_F(ConvertTest, SymlinkReplacedByDirectory) {
  auto l1 = layer({{"s", "symlink", "", 0777, 0, 0, "/etc"}});
  auto l2 = layer({{"s", "dir"}, {"s/f", "file", "inside"}});
  convert({l1, l2});
  EXPECT_EQ(describe()["s"], "dir 0755 0 0");
  EXPECT_EQ(read("/s/f"), "inside");
}

TEST_F(ConvertTest, HardlinkWithinLayerSharesInode) {
  auto l1 = layer({{"bin", "dir"}, {"bin/a", "file", "tool"}, {"bin/b", "hardlink", "", -1, 0, 0, "bin/a"},
                   {"bin/c", "hardlink", "", -1, 0, 0, "./bin/a"}});
  convert({l1});
  auto a = inode_and_links("bin/a");
  EXPECT_EQ(a.second, 3);
  EXPECT_EQ(inode_and_links("bin/b").first, a.first);
  EXPECT_EQ(inode_and_links("bin/c").first, a.first);
  EXPECT_EQ(read("/bin/c"), "tool");
}

TEST_F(ConvertTest, HardlinkAcrossLayersSharesInode) {
  auto l1 = layer({{"usr", "dir"}, {"usr/python3.11", "file", "interpreter"}});
  auto l2 = layer({{"usr/python3", "hardlink", "", -1, 0, 0, "/usr/python3.11"}});
  convert({l1, l2});
  auto target = inode_and_links("usr/python3.11");
  EXPECT_EQ(target.second, 2);
  EXPECT_EQ(inode_and_links("usr/python3").first, target.first);
  EXPECT_EQ(read("/usr/python3"), "interpreter");
}

TEST_F(ConvertTest, HardlinkKeepsItsFileWhenALaterLayerDeletesTheTarget) {
  auto l1 = layer({{"t", "file", "contents"}, {"link", "hardlink", "", -1, 0, 0, "t"}});
  auto l2 = layer({{".wh.t"}});
  auto result = convert({l1, l2});
  EXPECT_FALSE(has(describe(), "t"));
  EXPECT_EQ(read("/link"), "contents");
  EXPECT_LE(inode_and_links("link").second, 1);  // a basic inode (count 1) prints no count
  EXPECT_TRUE(result.warnings.empty());
}

TEST_F(ConvertTest, HardlinkKeepsTheOldContentsWhenALaterLayerReplacesTheTarget) {
  auto l1 = layer({{"t", "file", "old"}, {"a", "hardlink", "", -1, 0, 0, "t"}, {"b", "hardlink", "", -1, 0, 0, "t"}});
  auto l2 = layer({{"t", "file", "new"}});
  convert({l1, l2});
  EXPECT_EQ(read("/t"), "new");
  EXPECT_EQ(read("/a"), "old");
  EXPECT_EQ(read("/b"), "old");
  EXPECT_EQ(inode_and_links("a").first, inode_and_links("b").first);
  EXPECT_EQ(inode_and_links("a").second, 2);
  EXPECT_NE(inode_and_links("a").first, inode_and_links("t").first);
}

// Known difference (docs/convert.md): a link whose target lies in a lower layer binds to
// the finished image, so deleting the target later drops the link.
TEST_F(ConvertTest, CrossLayerHardlinkToWhitedOutTargetIsSkippedWithWarning) {
  auto l1 = layer({{"t", "file", "t"}, {"keep", "file", "k"}});
  auto l2 = layer({{"link", "hardlink", "", -1, 0, 0, "t"}});
  auto l3 = layer({{".wh.t"}});
  auto result = convert({l1, l2, l3});
  Names d = describe();
  EXPECT_FALSE(has(d, "t"));
  EXPECT_FALSE(has(d, "link"));
  EXPECT_TRUE(contains_line_with(result.warnings, "/link", "skipped"));
}

TEST_F(ConvertTest, WhiteoutStoredAsHardlinkIsStillAWhiteout) {
  auto l1 = layer({{"f", "file", "f"}});
  auto l2 = layer({{".wh.f", "hardlink", "", -1, 0, 0, "f"}});
  auto result = convert({l1, l2});
  EXPECT_TRUE(describe().empty());  // neither f nor .wh.f
  EXPECT_TRUE(result.warnings.empty());
}

TEST_F(ConvertTest, LongNamesInPaxAndGnuFormats) {
  std::string over100 = std::string(60, 'd') + "/" + std::string(80, 'f');
  std::string over255 = std::string(120, 'a') + "/" + std::string(120, 'b') + "/" + std::string(200, 'c');
  for (const char* format : {"pax", "gnu"}) {
    auto l1 = layer({{over100, "file", "100"}, {over255, "file", "255"},
                     {"link", "symlink", "", 0777, 0, 0, over255}}, "gzip", format);
    convert({l1});
    EXPECT_EQ(read("/" + over100), "100") << format;
    EXPECT_EQ(read("/" + over255), "255") << format;
    EXPECT_EQ(read("/link"), "255") << format;  // the long target is stored whole
  }
}

TEST_F(ConvertTest, NamesAreKeptByteForByteUtf8OrNot) {
  Entry latin1{"", "file", "latin1"};
  latin1.name_hex = "636166e9";  // "caf\xe9", not UTF-8
  auto l1 = layer({latin1, {"caf\xc3\xa9", "file", "utf8"}});
  convert({l1});
  EXPECT_EQ(list("/"), (std::vector<std::string>{"caf\xc3\xa9", "caf\xe9"}));
  EXPECT_EQ(read("/caf\xe9"), "latin1");
  EXPECT_EQ(read("/caf\xc3\xa9"), "utf8");
}

TEST_F(ConvertTest, ModesOwnersAndSpecialBitsAreKept) {
  auto l1 = layer({{"suid", "file", "s", 04755}, {"sgid-dir", "dir", "", 02775}, {"sticky", "dir", "", 01777},
                   {"owned", "file", "o", 0640, 1234, 5678}, {"secret", "file", "shadow", 0},
                   {"locked", "dir", "", 0}, {"locked/inside", "file", "i"}});
  convert({l1});
  Names d = describe();
  EXPECT_EQ(d["suid"], "file 04755 0 0");
  EXPECT_EQ(d["sgid-dir"], "dir 02775 0 0");
  EXPECT_EQ(d["sticky"], "dir 01777 0 0");
  EXPECT_EQ(d["owned"], "file 0640 1234 5678");
  EXPECT_EQ(d["secret"], "file 00 0 0");
  EXPECT_EQ(d["locked"], "dir 00 0 0");
  EXPECT_EQ(read("/secret"), "shadow");  // mode 000 does not stop the conversion
  EXPECT_EQ(read("/locked/inside"), "i");
}

TEST_F(ConvertTest, DevicesAndSocketsAreSkippedWithWarningsFifosKept) {
  auto l1 = layer({{"dev", "dir"}, {"dev/null", "char"}, {"dev/sda", "block"}, {"pipe", "fifo"}});
  auto result = convert({l1});
  Names d = describe();
  EXPECT_FALSE(has(d, "dev/null"));
  EXPECT_FALSE(has(d, "dev/sda"));
  EXPECT_EQ(d["pipe"].substr(0, 4), "pipe");
  EXPECT_TRUE(contains_line_with(result.warnings, "dev/null", "device node skipped"));
  EXPECT_TRUE(contains_line_with(result.warnings, "layer1.gzip", "dev/sda"));
}

TEST_F(ConvertTest, HostilePathsAreDroppedOrKeptInsideTheImage) {
  capsa::test::TempDir host;
  std::string escape = host / "escape";
  auto l1 = layer({{"../escape", "file", "out"}, {host.path() + "/escape", "file", "abs"}, {"/abs/path", "file", "a"},
                   {"a/../../b", "file", "b"}, {"./dot/./file", "file", "d"}, {"a//b", "file", "ab"},
                   {"../.wh.escape"}, {"a/../.wh..wh..opq"}});
  auto result = convert({l1});
  Names d = describe();
  EXPECT_EQ(read("/abs/path"), "a");
  EXPECT_EQ(read(host.path() + "/escape"), "abs");  // an absolute name is a path inside the image
  EXPECT_EQ(read("/dot/file"), "d");
  EXPECT_EQ(read("/a/b"), "ab");
  EXPECT_FALSE(has(d, "escape"));
  EXPECT_FALSE(has(d, "b"));
  EXPECT_TRUE(contains_line_with(result.warnings, "(layer1.gzip): ../escape", "\"..\""));
  EXPECT_TRUE(contains_line_with(result.warnings, "a/../../b", "skipped"));
  EXPECT_TRUE(contains_line_with(result.warnings, "../.wh.escape", "skipped"));  // a whiteout aimed outside
  EXPECT_TRUE(contains_line_with(result.warnings, "a/../.wh..wh..opq", "skipped"));
  struct stat st {};
  EXPECT_NE(::stat(escape.c_str(), &st), 0);  // nothing written on the host
  EXPECT_NE(::stat((dir_ / "../escape").c_str(), &st), 0);
}

TEST_F(ConvertTest, EntryThroughSymlinkNeverReachesItsTarget) {
  capsa::test::TempDir host;
  std::string sentinel = host.write("passwd", "host file");
  auto same_layer = layer({{"evil", "symlink", "", 0777, 0, 0, host.path()}, {"evil/passwd", "file", "pwned"}});
  convert({same_layer});
  EXPECT_EQ(describe()["evil"], "dir 0755 0 0");  // the later entry made it a real directory
  EXPECT_EQ(read("/evil/passwd"), "pwned");
  EXPECT_EQ(capsa::test::read_file(sentinel), "host file");

  auto lower = layer({{"evil", "symlink", "", 0777, 0, 0, host.path()}});
  auto upper = layer({{"evil/passwd", "file", "pwned"}});
  convert({lower, upper});
  EXPECT_EQ(describe()["evil"], "dir 0755 0 0");
  EXPECT_EQ(capsa::test::read_file(sentinel), "host file");

  auto link_out = layer({{"etc", "symlink", "", 0777, 0, 0, "/"}, {"h", "hardlink", "", -1, 0, 0, sentinel}});
  auto result = convert({link_out});
  EXPECT_FALSE(has(describe(), "h"));  // names a path inside the image, which does not exist
  EXPECT_TRUE(contains_line_with(result.warnings, "hardlink /h", "skipped"));
}

TEST_F(ConvertTest, SameLayerDuplicateLastEntryWins) {
  auto l1 = layer({{"f", "file", "first"}, {"f", "file", "second"}, {"d", "dir"}, {"d/x", "file", "x"},
                   {"d", "file", "file now"}});
  convert({l1});
  EXPECT_EQ(read("/f"), "second");
  EXPECT_EQ(read("/d"), "file now");
}

TEST_F(ConvertTest, DuplicateLayerIsAppliedTwice) {
  auto base = layer({{"f", "file", "base"}});
  auto remove = layer({{".wh.f"}, {"g", "file", "g"}});
  auto result = convert({base, remove, base});
  EXPECT_EQ(read("/f"), "base");
  EXPECT_EQ(read("/g"), "g");
  ASSERT_EQ(result.diff_ids.size(), 3u);
  EXPECT_EQ(result.diff_ids[0], result.diff_ids[2]);
}

TEST_F(ConvertTest, ExtraEntriesWinOverLayers) {
  auto l1 = layer({{".singularity.d", "dir", "", 0700}, {".singularity.d/runscript", "file", "from layer"},
                   {"bin", "dir"}});
  std::vector<ExtraEntry> extras{
      {"/.singularity.d", ExtraEntry::Type::Directory, 0755, 0, 0, ""},
      {"/.singularity.d/runscript", ExtraEntry::Type::File, 0755, 0, 0, "#!/bin/sh\nexec \"$@\"\n"},
      {"/.singularity.d/actions/run", ExtraEntry::Type::File, 0755, 0, 0, "run"},
      {"/singularity", ExtraEntry::Type::Symlink, 0777, 0, 0, ".singularity.d/runscript"},
      {"/bin", ExtraEntry::Type::Symlink, 0777, 0, 0, "usr/bin"}};
  convert({l1}, extras);
  Names d = describe();
  EXPECT_EQ(d[".singularity.d"], "dir 0755 0 0");
  EXPECT_EQ(read("/.singularity.d/runscript"), "#!/bin/sh\nexec \"$@\"\n");
  EXPECT_EQ(read("/singularity"), "#!/bin/sh\nexec \"$@\"\n");
  EXPECT_EQ(d["bin"], "slink 0777 0 0 usr/bin");
  EXPECT_EQ(read("/.singularity.d/actions/run"), "run");
}

TEST_F(ConvertTest, EntriesWantedOnlyIfMissingNeverReplaceTheImagesOwn) {
  // Bind points for the runtime: /tmp is the image's (1777) and stays so; /etc/hosts and
  // /proc are added because no layer has them; a whited-out /home stays absent.
  auto l1 = layer({{"tmp", "dir", "", 01777}, {"etc", "dir"}, {"etc/passwd", "file", "root:x:0:0::/root:/bin/sh\n"},
                   {"home", "dir"}});
  auto l2 = layer({{".wh.home", "file"}});
  auto missing = [](std::string path, ExtraEntry::Type type, mode_t mode) {
    ExtraEntry e{std::move(path), type, mode, 0, 0, ""};
    e.only_if_missing = true;
    return e;
  };
  convert({l1, l2}, {missing("/tmp", ExtraEntry::Type::Directory, 0755),
                     missing("/etc/hosts", ExtraEntry::Type::File, 0644),
                     missing("/etc/passwd", ExtraEntry::Type::File, 0644),
                     missing("/proc", ExtraEntry::Type::Directory, 0755),
                     missing("/home", ExtraEntry::Type::Directory, 0755)});
  Names d = describe();
  EXPECT_EQ(d["tmp"], "dir 01777 0 0");
  EXPECT_EQ(d["etc/hosts"], "file 0644 0 0");
  EXPECT_EQ(read("/etc/hosts"), "");
  EXPECT_EQ(read("/etc/passwd"), "root:x:0:0::/root:/bin/sh\n");
  EXPECT_EQ(d["proc"], "dir 0755 0 0");
  EXPECT_EQ(d.count("home"), 0u) << "a whiteout in the image wins over a bind point";
}

TEST_F(ConvertTest, SourceDateEpochClampsTimes) {
  auto l1 = layer({{"f", "file", "f"}});  // mtime 1700000000
  ConvertOptions options;
  options.source_date_epoch = 1600000000;
  convert({l1}, {}, options);
  auto stat = capsa::test::run_process({"rdsquashfs", "--stat", "f", output_});
  EXPECT_NE(stat.out.find("(1600000000)"), std::string::npos) << stat.out;
}

TEST_F(ConvertTest, SameInputGivesTheSameImageBytes) {
  std::vector<Entry> entries;
  for (int i = 0; i < 200; ++i)
    entries.push_back({"d" + std::to_string(i % 7) + "/f" + std::to_string(i), "file", std::string(static_cast<std::size_t>(i) * 997, static_cast<char>('a' + i % 26))});
  auto l1 = layer(entries);
  std::vector<ExtraEntry> extras{{"/.singularity.d/runscript", ExtraEntry::Type::File, 0755, 0, 0, "run"}};
  ConvertOptions options;
  options.source_date_epoch = 1650000000;
  options.workers = 4;
  convert({l1}, extras, options);
  std::string first = capsa::test::read_file(output_);
  options.workers = 1;
  convert({l1}, extras, options);
  EXPECT_TRUE(first == capsa::test::read_file(output_));
}

TEST_F(ConvertTest, XattrsAreDroppedWithOneSummaryWarning) {
  auto l1 = layer({{"ping", "file", "p", 0755, 0, 0, "", {{"security.capability", "x"}}},
                   {"other", "file", "o", 0644, 0, 0, "", {{"user.note", "y"}}}});
  auto result = convert({l1});
  EXPECT_EQ(read("/ping"), "p");
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("2 entries carried extended attributes"), std::string::npos);
}

}  // namespace
}  // namespace capsa::convert::test
