// capsa's FUSE server without a kernel: requests go to its handlers through a libfuse
// session with a stand-in channel (support/fuse_driver), so the tree it serves is
// compared with what the Reader reads from the same image, hostile listings are checked,
// and the fuzzers' inputs are replayed, all without a mount or privilege. (Mounted for
// real, against squashfuse_ll and the kernel: tests/runtime/image_mount_test.cpp.)
#include "squashfs/fuse_server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "convert/convert.hpp"
#include "convert/merge_tree.hpp"
#include "convert/squashfs_writer.hpp"
#include "oci/digest.hpp"
#include "sif/image.hpp"
#include "squashfs/image.hpp"
#include "squashfs/reader.hpp"
#include "support/fuse_driver.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::squashfs {
namespace {

using test::FuseAttributes;
using test::FuseDirent;
using test::FuseDriver;
using test::FuseEntry;
using Tree = std::map<std::string, std::string>;  // path -> one line describing the entry

std::string sha256_hex(const std::string& data) { return oci::Digest::sha256_of(data).hex(); }

char type_letter(std::uint32_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return 'd';
    case S_IFREG:
      return 'f';
    case S_IFLNK:
      return 'l';
    case S_IFBLK:
      return 'b';
    case S_IFCHR:
      return 'c';
    case S_IFIFO:
      return 'p';
    default:
      return 's';
  }
}

// One line for an entry: what both the Reader and the server must agree on (inode
// numbers and directory sizes aside, which only the server reports).
std::string describe(char type, std::uint32_t mode, std::uint32_t uid, std::uint32_t gid, std::uint32_t nlink,
                     std::uint64_t mtime, std::uint64_t size, const std::string& extra) {
  char line[160];
  std::snprintf(line, sizeof line, "%c %04o %u:%u nlink=%u mtime=%llu size=%llu ", type, mode & 07777u, uid, gid, nlink,
                static_cast<unsigned long long>(mtime), static_cast<unsigned long long>(type == 'f' ? size : 0));
  return line + extra;
}

Tree tree_from_reader(const Reader& reader) {
  struct Collect : TreeVisitor {
    Tree tree;
    std::vector<std::string> dirs;
    std::map<std::uint32_t, std::string> digests;  // by inode: hard links are read once
    std::string path_of(const Entry& e) const {
      if (dirs.empty()) return "/";
      return (dirs.back() == "/" ? "" : dirs.back()) + "/" + e.name;
    }
    void enter_directory(const Entry& e) override {
      std::string path = path_of(e);
      tree[path] = describe('d', e.mode, e.uid, e.gid, e.nlink, e.mtime, 0, "");
      dirs.push_back(path);
    }
    void leave_directory(const Entry&) override { dirs.pop_back(); }
    void visit(const Entry& e, const ReadContent& read) override {
      std::string extra;
      char type = 'f';
      switch (e.type) {
        case Entry::Type::File: {
          auto [known, first] = digests.try_emplace(e.inode_number);
          if (first) {
            std::string content;
            read([&](const char* data, std::size_t size) { content.append(data, size); });
            known->second = sha256_hex(content);
          }
          extra = known->second;
          break;
        }
        case Entry::Type::Symlink:
          type = 'l';
          extra = e.target;
          break;
        case Entry::Type::BlockDevice:
        case Entry::Type::CharDevice:
          type = e.type == Entry::Type::BlockDevice ? 'b' : 'c';
          extra = std::to_string(e.major) + "," + std::to_string(e.minor);
          break;
        case Entry::Type::Fifo:
          type = 'p';
          break;
        case Entry::Type::Socket:
          type = 's';
          break;
        case Entry::Type::Directory:
          break;
      }
      tree[path_of(e)] = describe(type, e.mode, e.uid, e.gid, e.nlink, e.mtime, e.size, extra);
    }
  } collect;
  reader.walk(collect);
  return collect.tree;
}

// `digests`: contents by inode number, so that hard links are read once.
std::string describe(FuseDriver& driver, std::uint64_t ino, const FuseAttributes& a,
                     std::map<std::uint64_t, std::string>& digests) {
  std::string extra;
  char type = type_letter(a.mode);
  if (type == 'f') {
    auto [known, first] = digests.try_emplace(a.ino);
    if (first) {
      std::string content;
      EXPECT_EQ(driver.read_all(ino, 128 << 10, std::uint64_t{1} << 30, content), 0);
      known->second = sha256_hex(content);
    }
    extra = known->second;
  } else if (type == 'l') {
    EXPECT_EQ(driver.readlink(ino, extra), 0);
  } else if (type == 'b' || type == 'c') {
    extra = std::to_string(::major(a.rdev)) + "," + std::to_string(::minor(a.rdev));
  }
  return describe(type, a.mode, a.uid, a.gid, a.nlink, a.mtime, a.size, extra);
}

void collect_from_server(FuseDriver& driver, std::uint64_t ino, const std::string& path, Tree& tree,
                         std::map<std::uint64_t, std::string>& digests) {
  std::vector<FuseDirent> plain, plus;
  ASSERT_EQ(driver.list(ino, false, 4096, plain), 0) << path;
  ASSERT_EQ(driver.list(ino, true, 4096, plus), 0) << path;
  ASSERT_EQ(plain.size(), plus.size()) << path;
  ASSERT_GE(plain.size(), 2u) << path;
  EXPECT_EQ(plain[0].name, ".");
  EXPECT_EQ(plain[1].name, "..");
  for (std::size_t i = 2; i < plain.size(); ++i) {
    const std::string& name = plain[i].name;
    const std::string child = (path == "/" ? "" : path) + "/" + name;
    FuseEntry entry;
    ASSERT_EQ(driver.lookup(ino, name, entry), 0) << child;
    FuseAttributes attr;
    ASSERT_EQ(driver.getattr(entry.nodeid, attr), 0) << child;
    // The three ways of asking agree: the listing, READDIRPLUS's entry, LOOKUP/GETATTR.
    EXPECT_EQ(plain[i].ino, attr.ino) << child;
    EXPECT_EQ(plain[i].type << 12, attr.mode & S_IFMT) << child;
    ASSERT_TRUE(plus[i].entry.has_value());
    EXPECT_EQ(plus[i].name, name);
    EXPECT_EQ(plus[i].entry->nodeid, entry.nodeid) << child;
    EXPECT_EQ(plus[i].entry->attr.mode, attr.mode) << child;
    EXPECT_EQ(entry.attr.size, attr.size) << child;
    tree[child] = describe(driver, entry.nodeid, attr, digests);
    if (S_ISDIR(attr.mode)) collect_from_server(driver, entry.nodeid, child, tree, digests);
  }
}

Tree tree_from_server(FuseImage& server, bool opens_without_asking) {
  FuseDriver driver(server, opens_without_asking);
  Tree tree;
  std::map<std::uint64_t, std::string> digests;
  FuseAttributes root;
  EXPECT_EQ(driver.getattr(1, root), 0);
  tree["/"] = describe(driver, 1, root, digests);
  collect_from_server(driver, 1, "/", tree, digests);
  return tree;
}

struct Window {
  std::string path;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

Window whole_file(const std::string& path) {
  return {path, 0, static_cast<std::uint64_t>(std::filesystem::file_size(path))};
}

Window primary_partition(const std::string& path) {
  sif::Image image = sif::Image::open(path);
  const sif::Descriptor* d = image.primary_partition();
  if (d == nullptr) throw Error("no primary partition in " + path);
  return {path, static_cast<std::uint64_t>(d->offset), static_cast<std::uint64_t>(d->size)};
}

// Images with every kind of entry between them: busybox as Singularity built it, the
// inspect fixture (symlink cases), and a 4 KiB-block image with multi-block, sparse and
// fragment-tailed files, hard links, devices, a fifo, a socket and a 200-byte name, in
// gzip, xz and zstd (capsa's own zstd decompressor, zstd_decompressor.hpp).
std::vector<Window> images() {
  return {primary_partition(test::sif_fixture("real/busybox_amd64.sif")),
          whole_file(test::built_fixtures() + "/inspect-image/rootfs.squashfs"),
          whole_file(std::string(CAPSA_FUZZ_CORPUS) + "/fuse_server/small-blocks-gzip.sqfs"),
          whole_file(std::string(CAPSA_FUZZ_CORPUS) + "/fuse_server/small-blocks-xz.sqfs"),
          whole_file(std::string(CAPSA_FUZZ_CORPUS) + "/fuse_server/small-blocks-zstd.sqfs")};
}

TEST(FuseServer, ServesTheTreeTheReaderReads) {
  for (const Window& image : images()) {
    SCOPED_TRACE(image.path);
    UniqueFd fd = open_file(image.path, O_RDONLY);
    Tree expected = tree_from_reader(Reader(fd.get(), image.offset, image.size, image.path));
    ASSERT_GT(expected.size(), 3u);
    FuseImage server(image.path, image.offset, image.size);
    for (bool opens_without_asking : {true, false}) {
      SCOPED_TRACE(opens_without_asking ? "the kernel opens without asking" : "OPEN and OPENDIR");
      EXPECT_EQ(tree_from_server(server, opens_without_asking), expected);
    }
  }
}

TEST(FuseServer, ServesTheImageAReaderOpened) {
  const Window image = primary_partition(test::sif_fixture("real/busybox_amd64.sif"));
  UniqueFd fd = open_file(image.path, O_RDONLY);
  Reader reader(fd.get(), image.offset, image.size, image.path + ": primary partition");
  FuseImage server(reader.image());
  EXPECT_EQ(tree_from_server(server, true), tree_from_reader(reader));
}

TEST(FuseServer, AnswersMissingNamesAndWrongTypes) {
  const Window image = whole_file(std::string(CAPSA_FUZZ_CORPUS) + "/fuse_server/small-blocks-gzip.sqfs");
  FuseImage server(image.path, image.offset, image.size);
  FuseDriver driver(server, true);
  FuseEntry entry;
  EXPECT_EQ(driver.lookup(1, "missing", entry), ENOENT);
  EXPECT_EQ(entry.nodeid, 0u) << "a negative entry";
  ASSERT_EQ(driver.lookup(1, "hello", entry), 0);
  FuseEntry below;
  EXPECT_EQ(driver.lookup(entry.nodeid, "x", below), ENOTDIR);
  std::string text;
  EXPECT_EQ(driver.readlink(entry.nodeid, text), EINVAL) << "not a symlink";
  std::vector<FuseDirent> listed;
  EXPECT_EQ(driver.readdir(entry.nodeid, 0, 0, 4096, false, listed), ENOTDIR);
  EXPECT_EQ(driver.read(entry.nodeid, 0, 0, 4096, text), 0);
  EXPECT_EQ(text, "hello from a fragment\n");
  EXPECT_EQ(driver.read(entry.nodeid, 0, 6, 4, text), 0);
  EXPECT_EQ(text, "from");
  EXPECT_EQ(driver.read(1, 0, 0, 4096, text), EINVAL) << "a directory is not read";
  FuseDriver asking(server, false);
  std::uint64_t fh = 0;
  EXPECT_EQ(asking.open(1, fh), EISDIR);
  EXPECT_EQ(asking.opendir(entry.nodeid, fh), ENOTDIR);
}

// A squashfs image written with the converter's writer from a hand-made tree, whose
// names need not be valid: what a hostile image can hold.
std::string image_with_a_directory_named(const std::string& path, const std::string& name) {
  convert::ConvertOptions options;
  options.workers = 1;
  convert::SquashfsWriter writer(path, options);
  convert::Node root;
  root.kind = convert::Kind::Directory;
  auto file = std::make_unique<convert::Node>();
  file->kind = convert::Kind::File;
  file->attrs.mode = 0644;
  file->file_inode = writer.begin_file();
  writer.append("x", 1);
  writer.end_file();
  root.children["ok"] = std::move(file);
  auto dir = std::make_unique<convert::Node>();
  dir->kind = convert::Kind::Directory;
  root.children[name] = std::move(dir);
  writer.finish(root, std::nullopt);
  return path;
}

TEST(FuseServer, NeverListsANameThatIsNotOnePathComponent) {
  test::TempDir work;
  for (const std::string name : {"..", ".", "a/b", "/abs"}) {
    SCOPED_TRACE(name);
    std::string path = image_with_a_directory_named(work / "hostile.squashfs", name);
    FuseImage server(path, 0, std::filesystem::file_size(path));
    for (bool opens_without_asking : {true, false}) {
      FuseDriver driver(server, opens_without_asking);
      std::vector<FuseDirent> listed;
      EXPECT_EQ(driver.list(1, false, 4096, listed), EIO);
      EXPECT_EQ(driver.list(1, true, 4096, listed), EIO);
      FuseEntry entry;
      EXPECT_EQ(driver.lookup(1, "ok", entry), EIO) << "the whole listing is refused";
    }
  }
}

TEST(FuseServer, RefusesWhatIsNotASquashfsImage) {
  sif::Image sif = sif::Image::open(test::sif_fixture("images/two-groups.sif"));
  const sif::Descriptor& ext3 = sif.object(3);
  try {
    FuseImage opened(sif.path(), static_cast<std::uint64_t>(ext3.offset), static_cast<std::uint64_t>(ext3.size));
    ADD_FAILURE() << "an ext3 partition was opened";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos) << e.what();
  }
}

// Every input of the squashfs fuzzers' corpora (crashes they found included) is served
// or refused, with replies the protocol allows.
TEST(FuseServer, ServesOrRefusesTheFuzzCorpus) {
  int served = 0;
  for (const char* corpus : {"fuse_server", "squashfs", "unpack"}) {
    for (const auto& input : std::filesystem::directory_iterator(std::string(CAPSA_FUZZ_CORPUS) + "/" + corpus)) {
      SCOPED_TRACE(input.path().string());
      for (bool opens_without_asking : {true, false}) {
        try {
          FuseImage server(input.path(), 0, input.file_size());
          FuseDriver driver(server, opens_without_asking);
          EXPECT_NO_THROW(test::fuse_walk(driver));
          ++served;
        } catch (const Error&) {
        }
      }
    }
  }
  EXPECT_GT(served, 10);
}

}  // namespace
}  // namespace capsa::squashfs
