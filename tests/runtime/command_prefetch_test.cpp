// CommandPrefetch (runtime/command_prefetch.hpp): the program an exec will find, and its
// ELF interpreter, are read into the page cache ahead; nothing the exec passes over is.
#include "runtime/command_prefetch.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"

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
  CommandPrefetch::start(root, "prog", "first:/missing:/not-executable:/first:/second").finish();
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
