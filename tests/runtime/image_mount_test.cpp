// The ways capsa mounts a squashfs image, compared on the same images: capsa's own FUSE
// server, squashfuse_ll and (as root) the kernel's squashfs through a loop device must
// show the same tree: types, modes, owners, sizes, times, contents, symlink targets,
// hard links, device numbers. Mounted for real, unprivileged in a user namespace when the
// suite runs as the test user.
#include <fcntl.h>
#include <ftw.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "oci/digest.hpp"
#include "runtime/image_mount.hpp"
#include "runtime/namespaces.hpp"
#include "sif/image.hpp"
#include "util/error.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

std::string busybox() { return test::sif_fixture("real/busybox_amd64.sif"); }

SquashfsLocation bare(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return {path, 0, static_cast<std::uint64_t>(st.st_size)};
}

SquashfsLocation partition_of(const std::string& sif_path) {
  sif::Image image = sif::Image::open(sif_path);
  const sif::Descriptor* primary = image.primary_partition();
  return {sif_path, static_cast<std::uint64_t>(primary->offset), static_cast<std::uint64_t>(primary->size)};
}

// One line per entry below `root`, sorted by path. Hard links show as the first path
// of their inode, so that inode numbers themselves (which differ between drivers) do
// not matter.
std::string manifest(const std::string& root) {
  static std::map<std::string, std::string>* lines;
  static std::map<std::pair<dev_t, ino_t>, std::string>* first_path;
  static std::size_t root_length;
  std::map<std::string, std::string> collected;
  std::map<std::pair<dev_t, ino_t>, std::string> inodes;
  lines = &collected;
  first_path = &inodes;
  root_length = root.size();
  auto visit = [](const char* path, const struct stat* st, int, FTW*) -> int {
    std::string relative = std::string(path).substr(root_length);
    if (relative.empty()) relative = "/";
    std::ostringstream line;
    line << std::oct << st->st_mode << std::dec << " " << st->st_uid << ":" << st->st_gid << " " << st->st_mtime;
    if (!S_ISDIR(st->st_mode)) line << " size=" << st->st_size << " nlink=" << st->st_nlink;
    if (S_ISREG(st->st_mode)) line << " " << oci::Digest::sha256_of(test::read_file(path)).hex();
    if (S_ISLNK(st->st_mode)) {
      char target[4096];
      ssize_t n = ::readlink(path, target, sizeof target);
      line << " -> " << std::string(target, n < 0 ? 0 : static_cast<std::size_t>(n));
    }
    if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) line << " dev=" << major(st->st_rdev) << "," << minor(st->st_rdev);
    if (!S_ISDIR(st->st_mode)) {
      auto [it, first] = first_path->emplace(std::make_pair(st->st_dev, st->st_ino), relative);
      if (!first) line << " link-of=" << it->second;
    }
    (*lines)[relative] = line.str();
    return 0;
  };
  EXPECT_EQ(::nftw(root.c_str(), visit, 64, FTW_PHYS), 0) << root;
  std::string all;
  for (const auto& [path, line] : collected) all += path + " " + line + "\n";
  return all;
}

// Every regular file below `root` read by `threads` threads at once, each file by all
// threads: the digests they saw, per path. Exercises concurrent requests on one server.
std::map<std::string, std::string> read_concurrently(const std::string& root, int threads) {
  std::vector<std::string> files;
  static std::vector<std::string>* found;
  found = &files;
  auto visit = [](const char* path, const struct stat* st, int, FTW*) -> int {
    if (S_ISREG(st->st_mode)) found->push_back(path);
    return 0;
  };
  ::nftw(root.c_str(), visit, 64, FTW_PHYS);
  std::vector<std::map<std::string, std::string>> seen(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      // Each thread starts at a different file, so different files are read at once.
      for (std::size_t i = 0; i < files.size(); ++i) {
        const std::string& path = files[(i + static_cast<std::size_t>(t) * 7) % files.size()];
        seen[static_cast<std::size_t>(t)][path.substr(root.size())] = oci::Digest::sha256_of(test::read_file(path)).hex();
      }
    });
  }
  for (auto& w : workers) w.join();
  for (int t = 1; t < threads; ++t) EXPECT_EQ(seen[static_cast<std::size_t>(t)], seen[0]) << "thread " << t;
  return seen[0];
}

std::string driver_name(MountDriver driver) {
  switch (driver) {
    case MountDriver::KernelLoop: return "kernel";
    case MountDriver::Builtin: return "builtin";
    case MountDriver::Squashfuse: return "squashfuse";
  }
  return "?";
}

// In a child with its own mount namespace (and, unprivileged, its own user namespace),
// mounts `image` with each driver below `work`, and writes each tree's manifest to
// work/<driver>.txt. Returns the drivers that ran.
std::vector<MountDriver> manifests(const SquashfsLocation& image, const test::TempDir& work) {
  std::vector<MountDriver> drivers = {MountDriver::Builtin, MountDriver::Squashfuse};
  if (::geteuid() == 0) drivers.push_back(MountDriver::KernelLoop);
  pid_t pid = ::fork();
  if (pid == 0) {
    try {
      enter_container_namespaces({::getuid(), ::getgid()});
      make_mounts_private();
      for (MountDriver driver : drivers) {
        std::string name = driver_name(driver);
        std::string point = work / ("mnt-" + name);
        ::mkdir(point.c_str(), 0755);
        mount_squashfs_with(driver, image, point);
        std::ofstream(work / (name + ".txt")) << manifest(point);
        if (driver == MountDriver::Builtin) {
          std::ostringstream out;
          for (const auto& [path, digest] : read_concurrently(point, 8)) out << path << " " << digest << "\n";
          std::ofstream(work / "builtin-threads.txt") << out.str();
        }
        ::umount2(point.c_str(), MNT_DETACH);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mounting in the child: %s\n", e.what());
      ::_exit(1);
    }
    ::_exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  return drivers;
}

// The first line where two manifests differ, or "" when they are equal (a whole
// manifest in a failure message would bury the difference).
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream left(a), right(b);
  std::string l, r;
  for (;;) {
    bool more_left = static_cast<bool>(std::getline(left, l));
    bool more_right = static_cast<bool>(std::getline(right, r));
    if (!more_left && !more_right) return "";
    if (!more_left || !more_right || l != r)
      return "\n  " + (more_left ? l : "(end)") + "\nvs\n  " + (more_right ? r : "(end)");
  }
}

void expect_same_trees(const SquashfsLocation& image) {
  test::TempDir work;
  ::chmod(work.path().c_str(), 0755);
  manifests(image, work);
  std::string reference = test::read_file(work / "squashfuse.txt");
  ASSERT_NE(reference, "");
  EXPECT_EQ(first_difference(test::read_file(work / "builtin.txt"), reference), "") << "builtin server vs squashfuse_ll";
  if (::geteuid() == 0) {
    EXPECT_EQ(first_difference(test::read_file(work / "kernel.txt"), reference), "") << "kernel vs squashfuse_ll";
  }
  // The concurrent reads saw what the single reader saw: each file's digest is the one on
  // that file's own line of the reference.
  std::map<std::string, std::string> reference_line;
  std::istringstream reference_lines(reference);
  for (std::string line; std::getline(reference_lines, line);) reference_line[line.substr(0, line.find(' '))] = line + " ";
  std::istringstream lines(test::read_file(work / "builtin-threads.txt"));
  std::size_t files = 0;
  for (std::string line; std::getline(lines, line); ++files) {
    std::string path = line.substr(0, line.find(' '));
    std::string digest = line.substr(line.find(' ') + 1);
    ASSERT_EQ(reference_line.count(path), 1u) << path;
    EXPECT_NE(reference_line[path].find(" " + digest + " "), std::string::npos) << path << ": " << reference_line[path];
  }
  EXPECT_GT(files, 0u);
}

// A squashfs made by gensquashfs from a description, so that the tree holds what no
// unprivileged user could create on disk: device nodes, foreign owners, setuid bits.
// Block size 4 KiB, so that small files span many blocks and fragments.
std::string make_image(const test::TempDir& dir, const std::string& compressor) {
  std::mt19937 random(42);
  std::string big(300 * 1024 + 123, '\0');
  for (auto& c : big) c = static_cast<char>(random());
  std::string sparse(64 * 1024, '\0');
  sparse.replace(20000, 5, "hello");
  dir.write("big", big);
  dir.write("sparse", sparse);
  dir.write("tail", std::string(4096 * 3 + 17, 't'));
  dir.write("small", "small\n");
  dir.write("empty", "");
  std::ostringstream pack;
  pack << "dir /bin 0755 0 0\n"
          "dir /data 0750 1234 5678\n"
          "dir /dev 0755 0 0\n"
          "dir /many 0755 0 0\n"
          "file /data/big 0644 1234 5678 " << dir / "big" << "\n"
          "file /data/sparse 0600 0 0 " << dir / "sparse" << "\n"
          "file /data/tail 0444 0 0 " << dir / "tail" << "\n"
          "file /bin/small 04755 0 0 " << dir / "small" << "\n"
          "file /empty 0644 0 0 " << dir / "empty" << "\n"
          "link /data/big-again 0644 0 0 /data/big\n"
          "slink /bin/relative 0777 0 0 small\n"
          "slink /absolute 0777 0 0 /data/big\n"
          "slink /dangling 0777 0 0 /no/such/file\n"
          "nod /dev/null 0666 0 0 c 1 3\n"
          "nod /dev/loop300 0660 0 6 b 7 300\n"
          "pipe /fifo 0644 0 0\n";
  // More entries than one directory header holds (256) and than one readdir reply.
  for (int i = 0; i < 700; ++i) {
    std::string name = "entry-" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 40), 'x');
    dir.write("many-" + std::to_string(i), std::to_string(i) + "\n");
    pack << "file /many/" << name << " 0644 " << i % 3 << " 0 " << dir / ("many-" + std::to_string(i)) << "\n";
  }
  std::string pack_file = dir.write("pack", pack.str());
  std::string image = dir / ("image-" + compressor + ".sqfs");
  auto result = test::run_process(
      {"gensquashfs", "-q", "-f", "-b", "4096", "-c", compressor, "-d", "mtime=1700000000", "-F", pack_file, image});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return image;
}

TEST(ImageMount, DriversShowTheSameBusyboxSif) {
  expect_same_trees(partition_of(busybox()));
}

TEST(ImageMount, DriversShowTheSameGeneratedTreeGzip) {
  if (!test::have_program("gensquashfs")) GTEST_SKIP() << "gensquashfs (squashfs-tools-ng) not installed";
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  expect_same_trees(bare(make_image(dir, "gzip")));
}

TEST(ImageMount, DriversShowTheSameGeneratedTreeXz) {
  if (!test::have_program("gensquashfs")) GTEST_SKIP() << "gensquashfs (squashfs-tools-ng) not installed";
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  expect_same_trees(bare(make_image(dir, "xz")));
}

TEST(ImageMount, DriversShowTheSameGeneratedTreeZstd) {
  if (!test::have_program("gensquashfs")) GTEST_SKIP() << "gensquashfs (squashfs-tools-ng) not installed";
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  expect_same_trees(bare(make_image(dir, "zstd")));
}

TEST(ImageMount, UnknownFuseServerIsRefused) {
  ::setenv("CAPSA_FUSE", "fusion", 1);
  EXPECT_THROW(unprivileged_driver(), Error);
  ::setenv("CAPSA_FUSE", "squashfuse", 1);
  EXPECT_EQ(unprivileged_driver(), MountDriver::Squashfuse);
  ::unsetenv("CAPSA_FUSE");
  EXPECT_EQ(unprivileged_driver(), MountDriver::Builtin);
}

}  // namespace
}  // namespace capsa::runtime
