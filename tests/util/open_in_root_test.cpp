// Paths inside a container root resolved as the container would see them, never outside
// it: the kernel's openat2(RESOLVE_IN_ROOT) and capsa's own walk (for kernels before 5.6)
// must agree on every case, escapes included.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "support/temp_dir.hpp"
#include "util/fd.hpp"
#include "util/open_in_root.hpp"

namespace capsa {
namespace {

struct Outcome {
  bool opened = false;
  int err = 0;
  ino_t inode = 0;
  bool operator==(const Outcome&) const = default;
};

Outcome resolve(int (*open_fn)(int, const std::string&, int), int root, const std::string& path, int flags) {
  errno = 0;
  UniqueFd fd(open_fn(root, path, flags));
  Outcome out;
  if (!fd) {
    out.err = errno;
    return out;
  }
  struct stat st {};
  EXPECT_EQ(::fstat(fd.get(), &st), 0);
  out.opened = true;
  out.inode = st.st_ino;
  return out;
}

TEST(OpenInRoot, TheKernelAndTheWalkAgreeAndNeverLeaveTheRoot) {
  // Without openat2 open_in_root is the walk itself, and comparing them proves nothing.
  open_how probe{};
  probe.flags = O_PATH | O_CLOEXEC;
  probe.resolve = RESOLVE_IN_ROOT;
  long probed = ::syscall(SYS_openat2, AT_FDCWD, ".", &probe, sizeof probe);
  if (probed < 0) GTEST_SKIP() << "no openat2 here: " << std::strerror(errno);
  ::close(static_cast<int>(probed));
  test::TempDir outside;
  namespace fs = std::filesystem;
  const fs::path root = fs::path(outside.path()) / "root";
  fs::create_directories(root / "etc");
  fs::create_directories(root / "usr/lib");
  outside.write("secret", "host\n");
  outside.write("root/etc/hosts", "image\n");
  outside.write("root/usr/lib/libc.so", "lib\n");
  fs::create_symlink("/usr/lib", root / "lib");                 // absolute: restarts at the root
  fs::create_symlink("../usr/lib/libc.so", root / "etc/libc");  // relative
  fs::create_symlink("../../../../secret", root / "etc/up");    // .. stops at the root
  fs::create_symlink("/../secret", root / "etc/abs-up");
  fs::create_symlink(outside.path() + "/secret", root / "etc/host-path");  // a host path, seen inside
  fs::create_symlink("loop-b", root / "etc/loop-a");
  fs::create_symlink("loop-a", root / "etc/loop-b");
  outside.write("root/secret", "inside\n");

  UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root_fd);
  struct stat inside {};
  ASSERT_EQ(::stat((root / "secret").c_str(), &inside), 0);
  for (const char* path : {"/", "/etc/hosts", "/lib/libc.so", "/etc/libc", "/etc/up", "/etc/abs-up", "/etc/host-path",
                           "/etc/loop-a", "/missing", "/etc/hosts/below", "/../../secret", "/etc/../etc/./hosts"}) {
    for (int flags : {O_PATH, O_RDONLY}) {
      SCOPED_TRACE(std::string(path) + (flags == O_PATH ? " O_PATH" : " O_RDONLY"));
      Outcome kernel = resolve(open_in_root, root_fd.get(), path, flags);
      Outcome walk = resolve(open_in_root_walk, root_fd.get(), path, flags);
      EXPECT_EQ(kernel, walk) << "kernel errno " << kernel.err << ", walk errno " << walk.err;
      std::string p = path;
      if (p == "/etc/up" || p == "/etc/abs-up" || p == "/../../secret") EXPECT_EQ(walk.inode, inside.st_ino) << "stays inside";
    }
  }
  EXPECT_EQ(resolve(open_in_root_walk, root_fd.get(), "/etc/loop-a", O_PATH).err, ELOOP);
  EXPECT_EQ(resolve(open_in_root_walk, root_fd.get(), "/etc/host-path", O_PATH).err, ENOENT) << "no /tmp/... inside";
}

}  // namespace
}  // namespace capsa
