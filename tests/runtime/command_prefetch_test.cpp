// CommandPrefetch (runtime/command_prefetch.hpp): the program an exec will find, and its
// ELF interpreter, are read into the page cache ahead, all of them also where the file
// system reads ahead 128 KiB at a time (FUSE); nothing the exec passes over is.
#include "runtime/command_prefetch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/image_mount.hpp"
#include "runtime/namespaces.hpp"
#include "sif/image.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInterpreter = "/lib64/ld-linux-x86-64.so.2";  // /bin/true's on Debian amd64

// How many of the file's pages are in the page cache, and how many it has.
std::pair<std::size_t, std::size_t> cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {0, 1};
  struct stat st {};
  ::fstat(fd, &st);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t pages = (static_cast<std::size_t>(st.st_size) + page - 1) / page;
  void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return {0, pages};
  std::vector<unsigned char> resident(pages);
  std::size_t cached = 0;
  if (::mincore(map, static_cast<std::size_t>(st.st_size), resident.data()) == 0)
    for (unsigned char r : resident) cached += r & 1;
  ::munmap(map, static_cast<std::size_t>(st.st_size));
  return {cached, pages};
}

// Written to disk and dropped from the page cache.
void copy_uncached(const std::string& from, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  fs::copy_file(from, to);
  fs::permissions(to, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  const int fd = ::open(to.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

TEST(CommandPrefetch, ReadsTheProgramTheExecFindsOnPathAndItsInterpreterAhead) {
  if (!fs::exists(kInterpreter)) GTEST_SKIP() << kInterpreter << " is not there";
  test::TempDir dir;
  const std::string root = dir / "root";
  ASSERT_NO_FATAL_FAILURE(copy_uncached("/bin/true", root + "/not-executable/prog"));
  std::filesystem::permissions(root + "/not-executable/prog", fs::perms::owner_read | fs::perms::owner_write);
  ASSERT_NO_FATAL_FAILURE(copy_uncached("/bin/true", root + "/first/prog"));
  ASSERT_NO_FATAL_FAILURE(copy_uncached("/bin/true", root + "/second/prog"));
  ASSERT_NO_FATAL_FAILURE(copy_uncached(fs::canonical(kInterpreter), root + kInterpreter));
  for (const std::string& file :
       {root + "/not-executable/prog", root + "/first/prog", root + "/second/prog", root + kInterpreter})
    if (cached_pages(file).first != 0) GTEST_SKIP() << dir.path() << " keeps written files cached (tmpfs?)";

  // A relative entry, a missing one and a file without an execute bit come first: none
  // is what the exec runs.
  CommandPrefetch::start(root, "prog", "first:/missing:/not-executable:/first:/second", ReadAhead::Whole).finish();
  // The reads were only asked for: they finish in the kernel.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto all_cached = [](const std::string& file) {
    auto [cached, pages] = cached_pages(file);
    return cached == pages;
  };
  while (!(all_cached(root + "/first/prog") && all_cached(root + kInterpreter)) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(all_cached(root + "/first/prog")) << "the program was not read ahead";
  EXPECT_TRUE(all_cached(root + kInterpreter)) << "its interpreter was not read ahead";
  EXPECT_EQ(cached_pages(root + "/second/prog").first, 0u) << "a later match on PATH was read too";
  EXPECT_EQ(cached_pages(root + "/not-executable/prog").first, 0u) << "a file the exec would pass over was read";
}

// Of `path`, how many pages from the start are cached before the first one that is not,
// and how many are cached in all.
std::pair<std::size_t, std::size_t> cached_prefix(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {0, 0};
  struct stat st {};
  ::fstat(fd, &st);
  const std::size_t length = static_cast<std::size_t>(st.st_size);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return {0, 0};
  std::vector<unsigned char> resident((length + page - 1) / page);
  std::size_t prefix = 0, all = 0;
  if (::mincore(map, length, resident.data()) == 0) {
    while (prefix < resident.size() && (resident[prefix] & 1)) ++prefix;
    for (unsigned char r : resident) all += r & 1;
  }
  ::munmap(map, length);
  return {prefix, all};
}

// In a child of its own mount (and, unprivileged, user) namespace: busybox's SIF mounted
// through capsa's FUSE server, whose read-ahead window is 128 KiB, /bin/true (all 1.1 MB
// of busybox) read ahead `how`, then `check` of its path, whose result is the child's
// exit code (0: as expected). Root's only: mincore(2) shows the page cache only to a
// file's owner or to who may write it, and tells everyone else that every page is there.
int after_read_ahead_on_fuse(ReadAhead how, int (*check)(const std::string&)) {
  sif::Image busybox = sif::Image::open(test::sif_fixture("real/busybox_amd64.sif"));
  const sif::Descriptor* primary = busybox.primary_partition();
  if (primary == nullptr) return -1;
  const SquashfsLocation image{busybox.path(), static_cast<std::uint64_t>(primary->offset),
                               static_cast<std::uint64_t>(primary->size)};
  test::TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const std::string point = dir / "mnt";
  if (::mkdir(point.c_str(), 0755) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 1;
    try {
      enter_container_namespaces({::getuid(), ::getgid()});
      make_mounts_private();
      mount_squashfs_with(MountDriver::Builtin, image, point);
      CommandPrefetch::start(point, "true", "/usr/bin:/bin", how).finish();
      code = check(point + "/bin/true");
      ::umount2(point.c_str(), MNT_DETACH);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "in the child: %s\n", e.what());
    }
    ::_exit(code);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Asked once for the whole file, the kernel read only its first window.
TEST(CommandPrefetch, ReadsAllOfAProgramOnFuseAhead) {
  if (::geteuid() != 0) GTEST_SKIP() << "mincore(2) shows the page cache of root's files to root only";
  const int code = after_read_ahead_on_fuse(ReadAhead::Whole, [](const std::string& program) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (cached_pages(program).first != cached_pages(program).second) {
      if (std::chrono::steady_clock::now() >= deadline) return 2;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  });
  EXPECT_NE(code, 2) << "busybox was not all read ahead";
  EXPECT_EQ(code, 0);
}

// With no CPU to spare, the first 128 KiB (32 pages) and nothing after them.
TEST(CommandPrefetch, ReadsTheHeadersOfAProgramOnFuseAhead) {
  if (::geteuid() != 0) GTEST_SKIP() << "mincore(2) shows the page cache of root's files to root only";
  const int code = after_read_ahead_on_fuse(ReadAhead::Headers, [](const std::string& program) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (cached_prefix(program).first < 32) {
      if (std::chrono::steady_clock::now() >= deadline) return 2;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // any read beyond them has ended
    return cached_prefix(program) == std::pair<std::size_t, std::size_t>{32, 32} ? 0 : 3;
  });
  EXPECT_NE(code, 2) << "busybox's first 128 KiB were not read ahead";
  EXPECT_NE(code, 3) << "more than busybox's first 128 KiB was read ahead";
  EXPECT_EQ(code, 0);
}

TEST(CommandPrefetch, HasCpusToSpareWithNoMoreThanFourRunnableTasksPerCpu) {
  EXPECT_TRUE(cpus_to_spare("0.52 0.58 0.59 2/345 12345\n", 2));
  EXPECT_TRUE(cpus_to_spare("3.10 2.00 1.00 8/345 12345\n", 2));
  EXPECT_FALSE(cpus_to_spare("3.10 2.00 1.00 9/345 12345\n", 2));
  EXPECT_FALSE(cpus_to_spare("9.00 4.00 2.00 57/412 12345\n", 2));
  EXPECT_TRUE(cpus_to_spare("9.00 4.00 2.00 57/412 12345\n", 64));
  EXPECT_FALSE(cpus_to_spare("", 2));
  EXPECT_FALSE(cpus_to_spare("not a loadavg", 2));
}

TEST(CommandPrefetch, ReadsNothingForACommandItCannotFind) {
  test::TempDir dir;
  ASSERT_NO_FATAL_FAILURE(copy_uncached("/bin/true", dir / "root/bin/prog"));
  if (cached_pages(dir / "root/bin/prog").first != 0) GTEST_SKIP() << dir.path() << " keeps written files cached";
  // Relative to a working directory, and a name on no entry of PATH.
  CommandPrefetch::start(dir / "root", "bin/prog", "/bin").finish();
  CommandPrefetch::start(dir / "root", "other", "/bin").finish();
  CommandPrefetch::start(dir / "missing-root", "/bin/prog", "/bin").finish();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cached_pages(dir / "root/bin/prog").first, 0u);
}

}  // namespace
}  // namespace capsa::runtime
