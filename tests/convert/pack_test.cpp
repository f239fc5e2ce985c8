// pack_directory (with unpack_to_directory to come back): directory -> squashfs ->
// directory and SIF -> directory -> squashfs keep every type, mode, owner, link and
// time. Trees are compared with tests/test_registries/tree-manifest.py (type, mode, owner,
// size, content hash, link target, link count), squashfs images through sqfs2tar
// (squashfs-tools-ng), which reads them independently of capsa.
#include "convert/pack.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "runtime/sandbox_run.hpp"
#include "sif/image.hpp"
#include "squashfs/unpack.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::convert {
namespace {

using squashfs::unpack_to_directory;
using test::run_process;
using test::TempDir;

std::string manifest_of_directory(const std::string& dir) {
  auto r = run_process({"/usr/bin/python3", CAPSA_TREE_MANIFEST, dir}, "", 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

std::string manifest_of_squashfs(const std::string& image) {
  auto r = run_process({"sh", "-c", "sqfs2tar -r . \"$0\" | /usr/bin/python3 \"$1\" --tar -", image, CAPSA_TREE_MANIFEST},
                       "", 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

// Every entry's mtime (symlinks' own), keyed by relative path.
std::map<std::string, std::int64_t> mtimes_of(const std::string& dir) {
  std::map<std::string, std::int64_t> out;
  for (auto it = std::filesystem::recursive_directory_iterator(dir); it != std::filesystem::end(it); ++it) {
    struct stat st {};
    ::lstat(it->path().c_str(), &st);
    out[std::filesystem::relative(it->path(), dir).string()] = st.st_mtim.tv_sec;
  }
  return out;
}

// Owner columns (4th and 5th) replaced, for trees whose owners a mapping changes.
std::string with_owners(const std::string& manifest, const std::string& uid, const std::string& gid) {
  std::istringstream in(manifest);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream s(line);
    for (std::string f; std::getline(s, f, '\t');) fields.push_back(f);
    if (fields.size() > 4) {
      fields[3] = uid;
      fields[4] = gid;
    }
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "\t" : "") + fields[i];
    out += "\n";
  }
  return out;
}

void write(const std::string& path, const std::string& content, mode_t mode) {
  std::ofstream(path, std::ios::binary) << content;
  ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
}

void set_time(const std::string& path, std::int64_t t) {
  timespec times[2] = {{t, 0}, {t, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

// A tree with every kind of entry pack and unpack keep. `foreign_owners`: some entries
// belong to other ids (root, or root of a user namespace with subordinate ids).
void make_tree(const std::string& root, bool foreign_owners) {
  ASSERT_EQ(::mkdir(root.c_str(), 0755), 0);
  auto p = [&](const std::string& rel) { return root + "/" + rel; };
  ::mkdir(p("bin").c_str(), 0755);
  ::mkdir(p("etc").c_str(), 0755);
  ::mkdir(p("tmp").c_str(), 01777);
  ::chmod(p("tmp").c_str(), 01777);
  ::mkdir(p("private").c_str(), 0700);
  ::mkdir(p("empty-dir").c_str(), 0755);
  ::mkdir(p("a").c_str(), 0755);
  ::mkdir(p("a/b").c_str(), 0750);
  write(p("etc/hostname"), "capsa\n", 0644);
  write(p("etc/shadow"), "root:*:1::::::\n", 0640);
  write(p("bin/suid"), "#!/bin/sh\n", 04755);
  write(p("bin/sgid"), "#!/bin/sh\n", 02755);
  write(p("empty"), "", 0644);
  // Mode 0000: readable for root (the manifest tool reads it); unprivileged callers get
  // their own test (PackReadsTheOwnersUnreadableFiles).
  if (foreign_owners) write(p("unreadable"), "secret\n", 0000);
  write(p("private/key"), "k", 0600);
  std::string big(3 * 128 * 1024 + 777, '\0');
  std::mt19937 random(7);
  for (char& c : big) c = static_cast<char>(random());
  write(p("a/b/big.bin"), big, 0644);
  write(p("a/b/same.bin"), big, 0644);  // identical content, distinct file
  write(p("bin/tool"), "#!/bin/sh\necho tool\n", 0755);
  ASSERT_EQ(::link(p("bin/tool").c_str(), p("bin/tool-link").c_str()), 0);
  ASSERT_EQ(::link(p("bin/tool").c_str(), p("a/tool-link2").c_str()), 0);
  ASSERT_EQ(::symlink("tool", p("bin/relative").c_str()), 0);
  ASSERT_EQ(::symlink("/etc/passwd", p("etc/absolute").c_str()), 0);
  ASSERT_EQ(::symlink("../nowhere", p("dangling").c_str()), 0);
  ASSERT_EQ(::mkfifo(p("a/fifo").c_str(), 0620), 0);
  if (foreign_owners) {
    ASSERT_EQ(::lchown(p("etc/shadow").c_str(), 0, 42), 0);
    ASSERT_EQ(::lchown(p("private").c_str(), 1234, 5678), 0);
    ASSERT_EQ(::lchown(p("private/key").c_str(), 1234, 5678), 0);
    ASSERT_EQ(::lchown(p("dangling").c_str(), 1000, 1000), 0);
    ASSERT_EQ(::lchown(p("bin/suid").c_str(), 0, 0), 0);
    ::chmod(p("bin/suid").c_str(), 04755);  // chown cleared it
  }
  // Times last, deepest first, since creating entries changes the parent's.
  std::vector<std::string> all;
  for (auto& e : std::filesystem::recursive_directory_iterator(root)) all.push_back(e.path());
  std::int64_t t = 1'600'000'000;
  for (auto it = all.rbegin(); it != all.rend(); ++it) set_time(*it, t += 3600);
  set_time(root, 1'500'000'000);
}

// Pack into the middle of a file (as into a SIF slot), then copy out the image.
std::string pack_at_offset(const std::string& dir, const std::string& out, const PackOptions& options,
                           std::uint64_t* bytes) {
  const std::uint64_t offset = 8192;
  UniqueFd fd = open_file(out + ".slot", O_RDWR | O_CREAT | O_TRUNC, 0644);
  std::string head(offset, 'H');
  write_all_at(fd.get(), {reinterpret_cast<const std::uint8_t*>(head.data()), head.size()}, 0);
  *bytes = pack_directory(dir, fd.get(), offset, options);
  EXPECT_EQ(file_size(fd.get()), offset + *bytes) << "the image ends where pack says";
  std::string slot_head(offset, '\0');
  read_exact_at(fd.get(), {reinterpret_cast<std::uint8_t*>(slot_head.data()), offset}, 0, "slot");
  EXPECT_EQ(slot_head, head) << "bytes before the offset are left alone";
  UniqueFd image = open_file(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  copy_range_to(fd.get(), offset, *bytes, image.get());
  return out;
}

// The whole round trip; returns what went wrong ("" when nothing).
std::string round_trip(const std::string& base, bool foreign_owners, const PackOptions& options, const std::string& uid,
                       const std::string& gid) {
  std::string failures;
  auto work = [&](const std::string& name) { return base + "/" + name; };
  make_tree(work("source"), foreign_owners);
  if (::testing::Test::HasFailure()) return "making the tree failed";
  std::string source = manifest_of_directory(work("source"));
  std::uint64_t bytes = 0;
  std::string image = pack_at_offset(work("source"), work("image.squashfs"), options, &bytes);
  std::string packed = manifest_of_squashfs(image);
  std::string expected_packed = uid.empty() ? source : with_owners(source, uid, gid);
  if (packed != expected_packed) failures += "packed image differs:\n" + packed + "\nexpected:\n" + expected_packed;

  unpack_to_directory(image, work("unpacked"));
  std::string unpacked = manifest_of_directory(work("unpacked"));
  if (unpacked != source) failures += "unpacked tree differs:\n" + unpacked + "\nexpected:\n" + source;
  if (mtimes_of(work("source")) != mtimes_of(work("unpacked"))) failures += "times differ\n";

  // Deterministic: the same tree packs to the same bytes.
  std::uint64_t again = 0;
  std::string second = pack_at_offset(work("source"), work("image2.squashfs"), options, &again);
  if (test::read_file(image) != test::read_file(second)) failures += "packing twice gave different images\n";
  return failures;
}

class Pack : public ::testing::Test {
 protected:
  ~Pack() override { runtime::remove_sandbox(work.path() + "/inner", runtime::RootMode::fakeroot_auto); }
  TempDir work;
};

TEST_F(Pack, DirectoryRoundTripKeepsTypesModesOwnersLinksAndTimes) {
  if (::geteuid() == 0) {
    // Root: owners recorded and restored exactly.
    EXPECT_EQ(round_trip(work.path(), true, {}, "", ""), "");
  } else {
    // Unprivileged: the caller's files are recorded as root (a fakeroot build) and come
    // back owned by the caller.
    PackOptions options;
    options.owner_as_root = ::getuid();
    options.group_as_root = ::getgid();
    EXPECT_EQ(round_trip(work.path(), false, options, "0", "0"), "");
  }
}

// --mksquashfs-args' options reach the image: its super block (unsquashfs -s, which
// reads it independently of capsa) says gzip and 64K blocks, and -all-root owns all by 0.
TEST_F(Pack, MksquashfsArgsReachTheImage) {
  make_tree(work / "source", false);
  PackOptions options;
  options.compression = "gzip";
  options.block_size = 64 * 1024;
  options.level = 9;
  options.force_uid = 0;
  options.force_gid = 0;
  std::uint64_t bytes = 0;
  std::string image = pack_at_offset(work / "source", work / "image.squashfs", options, &bytes);
  auto super = run_process({"unsquashfs", "-s", image});
  ASSERT_EQ(super.exit_code, 0) << super.err;
  EXPECT_NE(super.out.find("Compression gzip"), std::string::npos) << super.out;
  EXPECT_NE(super.out.find("Block size 65536"), std::string::npos) << super.out;
  EXPECT_EQ(manifest_of_squashfs(image), with_owners(manifest_of_directory(work / "source"), "0", "0"));

  PackOptions owned;
  owned.force_uid = 4321;
  owned.force_gid = 8765;
  std::string other = pack_at_offset(work / "source", work / "owned.squashfs", owned, &bytes);
  EXPECT_EQ(manifest_of_squashfs(other), with_owners(manifest_of_directory(work / "source"), "4321", "8765"));
}

TEST_F(Pack, SubordinateIdsKeepOwnersInsideTheUserNamespace) {
  if (::geteuid() == 0) GTEST_SKIP() << "the unprivileged run covers the user namespace";
  if (runtime::resolve_root_mode(runtime::RootMode::fakeroot_auto) != runtime::RootMode::fakeroot_subid)
    GTEST_SKIP() << "no /etc/subuid range for this user (scripts/create-test-user.sh gives capsa-test one)";
  ASSERT_EQ(::mkdir((work / "inner").c_str(), 0755), 0);
  std::string report = work / "report";
  int status = runtime::run_in_user_namespace(runtime::RootMode::fakeroot_subid, [&] {
    // Inside the namespace chown to ids 1..65536 works: the tree has foreign owners,
    // and they survive pack and unpack as they do for real root.
    std::string failures = round_trip(work / "inner", true, {}, "", "");
    std::ofstream(report) << failures;
    return failures.empty() ? 0 : 1;
  });
  EXPECT_EQ(status, 0) << test::read_file(report);
}

// The primary partition of a SIF, copied out for sqfs2tar.
std::string extract_partition(const std::string& sif_path, const std::string& out) {
  sif::Image image = sif::Image::open(sif_path);
  const sif::Descriptor* primary = image.primary_partition();
  UniqueFd fd = open_file(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  copy_range_to(image.fd(), static_cast<std::uint64_t>(primary->offset), static_cast<std::uint64_t>(primary->size),
                fd.get());
  return out;
}

TEST_F(Pack, SifToSandboxToSquashfsEqualsTheOriginal) {
  const std::string sif = test::sif_fixture("real/busybox_amd64.sif");
  std::string original = manifest_of_squashfs(extract_partition(sif, work / "original.squashfs"));
  ASSERT_NE(original.find("bin/busybox"), std::string::npos) << original;
  // The image has entries owned by 1, 8 and 65534: exact owners need root, or the
  // subordinate ids of a fakeroot user namespace (unpack and pack both inside it).
  runtime::RootMode mode = runtime::RootMode::real_root;
  if (::geteuid() != 0) mode = runtime::resolve_root_mode(runtime::RootMode::fakeroot_auto);
  const std::string sandbox = work / "inner";
  int status = runtime::run_in_user_namespace(mode, [&] {
    unpack_to_directory(sif, sandbox);
    PackOptions options;
    if (mode == runtime::RootMode::fakeroot_emulated) {
      options.owner_as_root = ::getuid();  // 0 here; a no-op kept for clarity
    }
    std::uint64_t bytes = 0;
    pack_at_offset(sandbox, work / "packed.squashfs", options, &bytes);
    return bytes > 0 ? 0 : 1;
  });
  ASSERT_EQ(status, 0);
  std::string packed = manifest_of_squashfs(work / "packed.squashfs");
  if (mode == runtime::RootMode::fakeroot_emulated) {
    // Only 0 is mapped: every owner becomes root.
    EXPECT_EQ(packed, with_owners(original, "0", "0"));
  } else {
    EXPECT_EQ(packed, original);
  }
}

TEST_F(Pack, SubordinateIdsMapBackWhenPackedFromOutside) {
  if (::geteuid() == 0) GTEST_SKIP() << "the unprivileged run covers subordinate ids";
  if (runtime::resolve_root_mode(runtime::RootMode::fakeroot_auto) != runtime::RootMode::fakeroot_subid)
    GTEST_SKIP() << "no /etc/subuid range for this user";
  const std::string tree = work / "inner";
  const std::string inside_manifest = work / "inside.manifest";
  // Made inside the namespace: on disk the owners are the caller and subordinate ids.
  int status = runtime::run_in_user_namespace(runtime::RootMode::fakeroot_subid, [&] {
    ::mkdir(tree.c_str(), 0755);
    std::ofstream(tree + "/root-file") << "root\n";
    std::ofstream(tree + "/user-file") << "user\n";
    ::mkdir((tree + "/svc").c_str(), 0755);
    std::ofstream(tree + "/svc/data") << "data\n";
    ::chmod((tree + "/svc/data").c_str(), 0644);
    ::chmod((tree + "/root-file").c_str(), 0644);
    ::chmod((tree + "/user-file").c_str(), 0644);
    if (::chown((tree + "/user-file").c_str(), 1234, 5678) != 0 || ::chown((tree + "/svc").c_str(), 42, 65534) != 0 ||
        ::chown((tree + "/svc/data").c_str(), 42, 42) != 0)
      return 1;
    auto listed = run_process({"/usr/bin/python3", CAPSA_TREE_MANIFEST, tree});
    std::ofstream(inside_manifest) << listed.out;
    return listed.exit_code;
  });
  ASSERT_EQ(status, 0);
  PackOptions options;
  options.owner_as_root = ::getuid();
  options.group_as_root = ::getgid();
  auto subuid = runtime::caller_subid_range("/etc/subuid");
  auto subgid = runtime::caller_subid_range("/etc/subgid");
  options.subuid_start = subuid->start;
  options.subuid_count = subuid->count;
  options.subgid_start = subgid->start;
  options.subgid_count = subgid->count;
  // Outside, the caller reads only what the modes let anyone read: the tree is world-readable.
  std::string expected = test::read_file(inside_manifest);
  std::uint64_t bytes = 0;
  std::string image = pack_at_offset(tree, work / "outside.squashfs", options, &bytes);
  EXPECT_EQ(manifest_of_squashfs(image), expected);
  EXPECT_NE(expected.find("user-file\tfile\t0644\t1234\t5678"), std::string::npos) << expected;
}

TEST_F(Pack, PackReadsTheOwnersUnreadableFiles) {
  // A fakeroot build's %post may leave files and directories their owner cannot read
  // (mode 0000, as root-made files often are); the caller owns them and may pack them.
  ASSERT_EQ(::mkdir((work / "tree").c_str(), 0755), 0);
  write(work / "tree/locked-file", "secret\n", 0644);
  ASSERT_EQ(::mkdir((work / "tree/locked-dir").c_str(), 0755), 0);
  write(work / "tree/locked-dir/inside", "in\n", 0644);
  ::chmod((work / "tree/locked-file").c_str(), 0000);
  ::chmod((work / "tree/locked-dir").c_str(), 0000);
  std::uint64_t bytes = 0;
  pack_at_offset(work / "tree", work / "image.squashfs", {}, &bytes);
  ::chmod((work / "tree/locked-dir").c_str(), 0755);
  unpack_to_directory(work / "image.squashfs", work / "out");
  struct stat st {};
  ASSERT_EQ(::stat((work / "tree/locked-file").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0000u) << "the source's mode is restored";
  ASSERT_EQ(::stat((work / "out/locked-file").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0000u);
  ::chmod((work / "out/locked-file").c_str(), 0600);
  EXPECT_EQ(test::read_file(work / "out/locked-file"), "secret\n");
  ASSERT_EQ(::stat((work / "out/locked-dir").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0000u);
  ::chmod((work / "out/locked-dir").c_str(), 0755);
  EXPECT_EQ(test::read_file(work / "out/locked-dir/inside"), "in\n");
}

}  // namespace
}  // namespace capsa::convert
