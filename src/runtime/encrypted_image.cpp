#include "runtime/encrypted_image.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "encryption/gocryptfs.hpp"
#include "util/detached_child.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

// "squashfs-*", the name Apptainer gives the inner image (its runtime looks for that
// prefix: internal/pkg/runtime/engine/apptainer/container_linux.go, gocryptfsMount).
std::string inner_image_name(const std::string& cipher_dir, const std::string& image) {
  DIR* dir = ::opendir(cipher_dir.c_str());
  if (dir == nullptr) throw_errno(cipher_dir);
  std::string found;
  bool config = false;
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.starts_with("squashfs-") && found.empty()) found = name;
    if (name == "gocryptfs.conf") config = true;
  }
  ::closedir(dir);
  if (found.empty() || !config)
    throw Error(image +
                ": the encrypted partition holds no gocryptfs directory with a squashfs-* image "
                "(the image is damaged)");
  return found;
}

void send_result(int socket, int fd, const std::string& message) {
  iovec iov{const_cast<char*>(message.data()), message.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  }
  [[maybe_unused]] ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
}

// The helper's side: returns only on failure (after reporting it).
int serve_decrypted(int socket, const SquashfsLocation& outer, const std::string& secret, const std::string& work,
                    const std::string& image) {
  try {
    if (!encryption::enter_private_mount_namespace()) throw_errno("making a private mount namespace for gocryptfs");
    if (::mount("capsa-decrypt", work.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=1m") != 0)
      throw_errno("mounting a tmpfs on " + work);
    const std::string cipher = work + "/cipher", plain = work + "/plain";
    if (::mkdir(cipher.c_str(), 0700) != 0 || ::mkdir(plain.c_str(), 0700) != 0) throw_errno(work);
    mount_squashfs_with(MountDriver::Builtin, outer, cipher);
    const std::string name = inner_image_name(cipher, image);
    Process gocryptfs = encryption::mount_gocryptfs(cipher, plain, secret, true, image);
    UniqueFd inner = open_file(plain + "/" + name, O_RDONLY | O_CLOEXEC);
    send_result(socket, inner.get(), "");
    inner.reset();
    // Until the container's command ends: then the parent-death signal ends this process,
    // gocryptfs gets its own (SIGTERM) and the outer server its (SIGKILL).
    gocryptfs.release();
    for (;;) ::pause();
  } catch (const std::exception& e) {
    send_result(socket, -1, e.what());
  }
  return 1;
}

}  // namespace

DecryptedImage decrypt_gocryptfs_partition(const SquashfsLocation& outer, const std::string& secret,
                                           const std::string& work_dir, const std::string& image) {
  encryption::gocryptfs_program();  // missing: said here, in the caller's words
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) throw_errno("socketpair");
  UniqueFd ours(pair[0]), theirs(pair[1]);
  SquashfsLocation location = outer;
  location.opened = nullptr;  // the helper's FUSE server opens the partition itself
  const int their_fd = theirs.get();
  DetachedChild helper = DetachedChild::start(
      [&] {
        ours.reset();
        return serve_decrypted(their_fd, location, secret, work_dir, image);
      },
      {.parent_death_signal = SIGTERM, .name = "the decryption helper"});
  theirs.reset();
  // The watcher holds a copy of the helper's end too: the helper's end is seen through
  // its exit, not through the socket closing.
  for (;;) {
    pollfd p{ours.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, 100);
    if (ready > 0) break;
    if (ready < 0 && errno != EINTR) throw_errno("waiting for the decryption helper");
    if (auto ended = helper.ended())
      throw Error(image + ": the decryption helper ended (exit status " + std::to_string(ended->code()) +
                  ") before it decrypted the image");
  }
  char text[4096];
  iovec iov{text, sizeof text};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(ours.get(), &msg, MSG_CMSG_CLOEXEC);
  if (n < 0) throw_errno("reading the decryption helper's answer");
  UniqueFd received;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(cmsg), sizeof fd);
      received = UniqueFd(fd);
    }
  }
  if (!received) throw Error(n > 0 ? std::string(text, static_cast<std::size_t>(n)) : image + ": decryption failed");
  DecryptedImage decrypted;
  decrypted.size = file_size(received.get());
  decrypted.fd = std::move(received);
  return decrypted;
}

}  // namespace capsa::runtime
