#include "runtime/instance_save.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "convert/pack.hpp"
#include "oci/platform.hpp"
#include "runtime/instance_state.hpp"
#include "sif/writer.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/process.hpp"

namespace capsa::runtime {
namespace {

// Where the instance's root is seen, alone, in the saver's own copy of its mount
// namespace: a tmpfs over /tmp (which every container has) holds the mount point.
constexpr const char* kScratch = "/tmp";
constexpr const char* kRootCopy = "/tmp/root";

bool same_namespace(int fd, const std::string& self) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(self.c_str(), &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

// In the child: enters the instance's mount namespace and returns the directory that
// shows the container's root alone, without what is mounted on it (a clone that is not
// recursive): the image and its writable layer only.
//   root       clones it with open_tree(2) from the host's user namespace, which sees
//              every owner as it is (root's --fakeroot maps root alone);
//   the user   joins the instance's user namespace too (the right to its mounts), makes a
//              private copy of the mount namespace and binds the root there; the owners
//              are then the container's (root inside a --fakeroot container is 0). So
//              does root where open_tree is missing (Linux < 5.2; capsa runs on 4.18).
std::string enter_root_copy(const InstanceRecord& record) {
  const std::string proc = "/proc/" + std::to_string(record.pid) + "/ns/";
  UniqueFd user(::open((proc + "user").c_str(), O_RDONLY | O_CLOEXEC));
  UniqueFd mnt(::open((proc + "mnt").c_str(), O_RDONLY | O_CLOEXEC));
  if (!user || !mnt) throw_errno("instance " + record.name + ": opening its namespaces");
  if (!instance_alive(record)) throw Error("instance " + record.name + " has just ended");
  const bool own_user_namespace = !same_namespace(user.get(), "/proc/self/ns/user");
  if (::geteuid() == 0) {
    if (::setns(mnt.get(), CLONE_NEWNS) != 0) throw_errno("joining the mount namespace of instance " + record.name);
    UniqueFd tree(static_cast<int>(::syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
    if (tree) {
      if (::fchdir(tree.get()) != 0) throw_errno("entering the root of instance " + record.name);
      return ".";
    }
    if (errno != ENOSYS) throw_errno("cloning the root of instance " + record.name);
    if (own_user_namespace && ::setns(user.get(), CLONE_NEWUSER) != 0)
      throw_errno("joining the user namespace of instance " + record.name);
  } else {
    if (own_user_namespace && ::setns(user.get(), CLONE_NEWUSER) != 0)
      throw_errno("joining the user namespace of instance " + record.name);
    if (::setns(mnt.get(), CLONE_NEWNS) != 0) throw_errno("joining the mount namespace of instance " + record.name);
  }
  // Nothing done below reaches the instance's own namespace.
  if (::unshare(CLONE_NEWNS) != 0) throw_errno("copying the mount namespace of instance " + record.name);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) throw_errno("making the copy private");
  if (::mount("tmpfs", kScratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") != 0)
    throw_errno(std::string("mounting a tmpfs at ") + kScratch + " in instance " + record.name);
  if (::mkdir(kRootCopy, 0700) != 0) throw_errno(kRootCopy);
  if (::mount("/", kRootCopy, nullptr, MS_BIND, nullptr) != 0)
    throw_errno("binding the root of instance " + record.name);
  return kRootCopy;
}

std::string absolute(const std::string& file) {
  std::error_code ec;
  auto path = std::filesystem::absolute(file, ec);
  if (ec) throw Error("instance save: " + file + ": " + ec.message());
  return path.lexically_normal().string();
}

}  // namespace

void save_instance(const std::string& name, const std::string& file) {
  check_instance_name(name);
  const std::optional<InstanceRecord> record = InstanceStore::for_caller().find(name);
  if (!record) throw Error("instance save: no instance named " + name + " of yours is running (`capsa instance list`)");
  // Unprivileged without --fakeroot, the image's files owned by root stay root's: some
  // (/etc/shadow, /root) cannot be read, and the owners would not be the image's.
  if (::geteuid() != 0 && !record->fakeroot)
    throw Error("instance save: instance " + name +
                " runs without --fakeroot, which an unprivileged user needs to read all of its image: "
                "start it with --fakeroot (the SPANK plugin: --container-remap-root)");
  const std::string target = absolute(file);
  // The SIF is made under a temporary name beside FILE and renamed over it by finish();
  // the slot removes it when destroyed unfinished.
  std::optional<sif::PartitionSlot> slot;
  try {
    slot.emplace(
        target, sif::CreateOptions{}, std::vector<sif::ObjectInput>{},
        sif::partition_input("", sif::FsType::Squashfs, sif::PartType::PrimSys, oci::host_platform().architecture));
  } catch (const Error& e) {
    throw Error("instance save: " + name + " into " + target + ": " + e.what());
  }
  // A pipe carries the child's result back (it runs in the instance's namespaces): the
  // squashfs image's size, or the one line that says why there is none.
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw_errno("instance save: a pipe");
  UniqueFd reader(pipe_fds[0]), writer(pipe_fds[1]);
  const int out = slot->fd();
  const auto offset = static_cast<std::uint64_t>(slot->offset());
  Process child = Process::start(
      [&]() -> int {
        reader.reset();
        std::string result;
        int status = 0;
        try {
          const std::string root = enter_root_copy(*record);
          result = std::to_string(convert::pack_directory(root, out, offset, convert::PackOptions{}));
        } catch (const std::exception& e) {
          result = e.what();
          status = 1;
        }
        [[maybe_unused]] auto n = ::write(writer.get(), result.data(), result.size());
        return status;
      },
      {.parent_death_signal = SIGKILL, .name = "the saver of the instance"});
  writer.reset();
  std::string result;
  char buffer[512];
  for (ssize_t n; (n = ::read(reader.get(), buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.append(buffer, static_cast<std::size_t>(n));
  }
  const ExitStatus status = child.wait();
  if (!status.success())
    throw Error("instance save: " + name + " into " + target + ": " +
                (result.empty() ? "the saver ended with status " + std::to_string(status.code()) : result));
  try {
    slot->finish(static_cast<std::int64_t>(std::stoull(result)));
  } catch (const std::exception& e) {
    throw Error("instance save: " + name + " into " + target + ": " + e.what());
  }
}

}  // namespace capsa::runtime
