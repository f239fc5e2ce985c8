// The reference trees pull tests compare against: umoci's unpack of the `layers` and
// `debian` test images, listed by tree-manifest.py, shows every OCI layer rule applied
// as the image's spec (tests/fixtures/oci/layers-spec.py) says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "registry_http.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::test {
namespace {

// The tree-manifest.py line of one entry; `content` is a file's bytes, a symlink target
// or a device's "major,minor".
std::string line(const std::string& path, const std::string& type, const std::string& mode, int uid, int gid,
                 const std::string& content, int links = 1) {
  std::ostringstream out;
  out << path << '\t' << type << '\t' << mode << '\t' << uid << '\t' << gid << '\t';
  if (type == "file")
    out << content.size() << '\t' << sha256_hex(content) << "\t-\t" << links;
  else
    out << "-\t-\t" << (content.empty() ? "-" : content) << '\t' << (type == "dir" ? "-" : std::to_string(links));
  return out.str();
}

// The tree umoci unpacks from built_fixtures()/oci-IMAGE:latest, as tree-manifest.py
// lines; unpacked once per image and kept for the whole run.
class UmociReference : public ::testing::Test {
 protected:
  virtual std::string image() const = 0;

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "umoci reproduces exact ownership only as root";
    if (!have_program("umoci")) GTEST_SKIP() << "umoci is not installed";
    auto& listing = listings()[image()];
    if (listing.lines.empty() && listing.error.empty()) listing = unpack_and_list(image());
    if (!listing.error.empty()) FAIL() << listing.error;
    lines_ = &listing.lines;
    rootfs_ = *listing.dir / "bundle/rootfs";
  }

  bool has(const std::string& expected) const {
    return std::find(lines_->begin(), lines_->end(), expected) != lines_->end();
  }
  // Paths equal to `path` or under it.
  std::vector<std::string> paths_under(const std::string& path) const {
    std::vector<std::string> paths;
    for (const auto& entry : *lines_) {
      const auto name = entry.substr(0, entry.find('\t'));
      if (name == path || name.rfind(path + "/", 0) == 0) paths.push_back(name);
    }
    return paths;
  }
  const std::vector<std::string>& lines() const { return *lines_; }
  const std::string& rootfs() const { return rootfs_; }

 private:
  struct Listing {
    std::vector<std::string> lines;
    std::string error;
    std::shared_ptr<TempDir> dir;  // the unpacked bundle, kept for the whole run
  };
  static std::map<std::string, Listing>& listings() {
    static std::map<std::string, Listing> cache;
    return cache;
  }
  static Listing unpack_and_list(const std::string& image) {
    Listing listing;
    listing.dir = std::make_shared<TempDir>();
    const auto& dir = *listing.dir;
    const auto unpack = run_process(
        {test_registry().tools + "/umoci-unpack.sh", built_fixtures() + "/oci-" + image, "latest", dir / "bundle"}, "",
        600);
    if (unpack.exit_code != 0) return {{}, "umoci-unpack.sh " + image + " failed: " + unpack.err, nullptr};
    const auto tree = run_process({test_registry().tools + "/tree-manifest.py", dir / "bundle/rootfs"}, "", 600);
    if (tree.exit_code != 0) return {{}, "tree-manifest.py failed: " + tree.err, nullptr};
    std::istringstream in(tree.out);
    for (std::string entry; std::getline(in, entry);) listing.lines.push_back(entry);
    return listing;
  }
  const std::vector<std::string>* lines_ = nullptr;
  std::string rootfs_;
};

class LayersReference : public UmociReference {
  std::string image() const override { return "layers"; }
};

class DebianReference : public UmociReference {
  std::string image() const override { return "debian"; }
};

TEST_F(LayersReference, WhiteoutsDeleteLowerLayersAndNeverShow) {
  EXPECT_TRUE(has(line("deleteme", "file", "0644", 0, 0, "recreated\n")));
  EXPECT_TRUE(paths_under("deldir").empty());
  EXPECT_TRUE(paths_under("never-existed").empty());
  EXPECT_TRUE(has(line("samelayer", "file", "0644", 0, 0, "layer3\n")));
  for (const auto& entry : lines()) EXPECT_EQ(entry.find(".wh."), std::string::npos) << entry;
}

TEST_F(LayersReference, OpaqueDirectoryKeepsOnlyItsOwnLayer) {
  EXPECT_EQ(paths_under("opaque"), (std::vector<std::string>{"opaque", "opaque/new"}));
}

TEST_F(LayersReference, ReplacementsUnlinkAndRecreate) {
  EXPECT_EQ(paths_under("dir2file"), (std::vector<std::string>{"dir2file", "dir2file/again"}));
  EXPECT_TRUE(has(line("dir2file", "dir", "0755", 0, 0, "")));
  EXPECT_TRUE(has(line("file2dir/child", "file", "0644", 0, 0, "child\n")));
  EXPECT_TRUE(has(line("link-swap", "dir", "0755", 0, 0, "")));
  EXPECT_TRUE(has(line("etc/hostname", "file", "0600", 0, 0, "replaced\n")));
  EXPECT_TRUE(has(line("dup", "file", "0644", 0, 0, "second\n")));
}

TEST_F(LayersReference, HardlinksWithinAndAcrossLayers) {
  EXPECT_TRUE(has(line("hl/original", "file", "0644", 0, 0, "original content\n", 2)));
  EXPECT_TRUE(has(line("hl/cross-layer", "file", "0644", 0, 0, "original content\n", 2)));
  EXPECT_TRUE(paths_under("hl/same-layer").empty());
  EXPECT_TRUE(has(line("hl/to-replace", "file", "0644", 0, 0, "new target\n")));
  EXPECT_TRUE(has(line("hl/to-replace-link", "file", "0644", 0, 0, "old target\n")));
}

TEST_F(LayersReference, ModesOwnersAndSpecialFiles) {
  EXPECT_TRUE(has(line("owned", "dir", "0755", 4321, 8765, "")));
  EXPECT_TRUE(has(line("owned/data", "file", "0640", 1234, 5678, "owned by 1234:5678\n")));
  EXPECT_TRUE(has(line("owned/big-ids", "file", "0644", 3000000, 3000001, "ids beyond the ustar octal fields\n")));
  EXPECT_TRUE(has(line("bin/suid-tool", "file", "4755", 0, 0, "setuid\n")));
  EXPECT_TRUE(has(line("bin/sgid-tool", "file", "2755", 0, 42, "setgid\n")));
  EXPECT_TRUE(has(line("shared", "dir", "2775", 0, 100, "")));
  EXPECT_TRUE(has(line("tmp", "dir", "1777", 0, 0, "")));
  EXPECT_TRUE(has(line("secret", "file", "0000", 0, 0, "unreadable\n")));
  EXPECT_TRUE(has(line("dev/null", "char", "0666", 0, 0, "1,3")));
  EXPECT_TRUE(has(line("empty-dir", "dir", "0755", 0, 0, "")));
}

TEST_F(LayersReference, LongNamesFromPaxAndGnuHeaders) {
  const std::string b(200, 'b');
  EXPECT_TRUE(has(line("long/" + std::string(120, 'a'), "file", "0644", 0, 0, "name over 100 bytes\n")));
  EXPECT_TRUE(has(line("long/" + b + "/" + std::string(100, 'c'), "file", "0644", 0, 0, "path over 255 bytes\n")));
  EXPECT_TRUE(has(line("gnu/" + std::string(150, 'g'), "file", "0644", 0, 0, "GNU long name\n")));
  EXPECT_TRUE(has(line("utf8/caf\xc3\xa9-\xc3\xbc.txt", "file", "0644", 0, 0, "non-ASCII name\n")));
}

// tree-manifest.py --tar lists a squashfs image (through sqfs2tar) exactly as it lists
// the unpacked tree: how tests compare capsa's squashfs without mounting it.
TEST_F(LayersReference, TarListingOfASquashfsEqualsTheTreeListing) {
  if (!have_program("mksquashfs") || !have_program("sqfs2tar")) GTEST_SKIP() << "squashfs tools missing";
  TempDir dir;
  const auto pack = run_process({"mksquashfs", rootfs(), dir / "image.sqfs", "-quiet", "-no-progress"});
  ASSERT_EQ(pack.exit_code, 0) << pack.err;
  const auto tar = run_process({"sh", "-c", "sqfs2tar -r . \"$1\" | \"$2\" --tar -", "sh", dir / "image.sqfs",
                                test_registry().tools + "/tree-manifest.py"});
  ASSERT_EQ(tar.exit_code, 0) << tar.err;
  std::string expected;
  for (const auto& entry : lines()) expected += entry + "\n";
  EXPECT_EQ(tar.out, expected);
}

TEST_F(DebianReference, BootstrapIsCleanedOfDevicesAndTheMirror) {
  for (const auto& entry : lines()) {
    EXPECT_EQ(entry.find("\tchar\t"), std::string::npos) << entry;
    EXPECT_EQ(entry.find("\tblock\t"), std::string::npos) << entry;
  }
  EXPECT_EQ(paths_under("dev"), std::vector<std::string>{"dev"});
  EXPECT_TRUE(has(line("etc/apt/sources.list", "file", "0644", 0, 0, "deb http://deb.debian.org/debian bookworm main\n")));
  EXPECT_EQ(paths_under("var/lib/apt/lists"),
            (std::vector<std::string>{"var/lib/apt/lists", "var/lib/apt/lists/partial"}));
}

TEST_F(DebianReference, LaterLayersDeleteMakeOpaqueAndHardlink) {
  EXPECT_TRUE(paths_under("usr/share/man").empty());
  EXPECT_TRUE(paths_under("var/log/dpkg.log").empty());
  EXPECT_EQ(paths_under("usr/share/doc"),
            (std::vector<std::string>{"usr/share/doc", "usr/share/doc/capsa", "usr/share/doc/capsa/README"}));
  EXPECT_TRUE(has(line("etc/capsa-layer", "file", "0644", 0, 0, "3\n")));
  const std::string hello = "#!/bin/sh\necho hello from layer 3\n";
  EXPECT_TRUE(has(line("usr/local/bin/capsa-hello", "file", "0755", 0, 0, hello, 2)));
  EXPECT_TRUE(has(line("usr/local/bin/capsa-hello-link", "file", "0755", 0, 0, hello, 2)));
  // A hardlink in layer 3 to bash from layer 1: same content, two links.
  auto field = [](const std::string& entry, int index) {
    std::istringstream in(entry);
    std::string value;
    for (int i = 0; i <= index; ++i) std::getline(in, value, '\t');
    return value;
  };
  std::string bash, link;
  for (const auto& entry : lines()) {
    if (entry.rfind("usr/bin/bash\t", 0) == 0) bash = entry;
    if (entry.rfind("usr/bin/capsa-bash-link\t", 0) == 0) link = entry;
  }
  ASSERT_FALSE(bash.empty());
  EXPECT_EQ(field(bash, 6), field(link, 6));
  EXPECT_EQ(field(bash, 8), "2");
  EXPECT_EQ(field(link, 8), "2");
}

}  // namespace
}  // namespace capsa::test
