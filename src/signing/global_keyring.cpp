#include "signing/global_keyring.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <span>

#include "signing/keyring.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/install_layout.hpp"

namespace capsa::signing {
namespace {

namespace fs = std::filesystem;

// The deepest existing folder on the way to `path`: who owns it decides who may create
// the file there.
std::string existing_parent(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  while (!dir.empty() && dir != dir.root_path() && !fs::exists(dir, ec)) dir = dir.parent_path();
  return dir.empty() ? "/" : dir.string();
}

}  // namespace

std::string global_keyring_file() { return config_candidates("global-pgp-public").front(); }

GlobalKeyring::GlobalKeyring() : path_(global_keyring_file()), home_(public_keys_from({path_})) {}

void GlobalKeyring::require_write_access(const std::string& command) const {
  if (::geteuid() == 0) return;
  const std::string dir = existing_parent(path_);
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && st.st_uid == ::geteuid()) return;
  throw Error("`capsa " + command + " --global` changes the administrator's keyring " + path_ +
              ": run it as root (or from a capsa installation of your own)");
}

void GlobalKeyring::save() {
  const std::string data = home_.export_public("", false);
  const fs::path folder = fs::path(path_).parent_path();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error(folder.string() + ": cannot create the folder of the global keyring: " + ec.message());
  // Written beside the file and renamed over it: a reader never sees half a keyring.
  const std::string temporary = path_ + ".tmp-" + std::to_string(::getpid());
  {
    UniqueFd fd = open_file(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    write_all(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
    ::fchmod(fd.get(), 0644);  // whatever the umask: every user's verify reads it
    if (::fsync(fd.get()) != 0) throw_errno("writing " + temporary);
  }
  if (::rename(temporary.c_str(), path_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    throw_errno("replacing " + path_);
  }
}

}  // namespace capsa::signing
