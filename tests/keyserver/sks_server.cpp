#include "sks_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "support/process.hpp"

namespace capsa::test {
namespace {

bool listening(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return ok;
}

// Debian installs it in /usr/sbin, which an unprivileged user's PATH may lack.
std::string sks_binary() { return std::filesystem::exists("/usr/sbin/sks") ? "/usr/sbin/sks" : "sks"; }

}  // namespace

SksServer::SksServer() {
  const char* base = std::getenv("CAPSA_TEST_KEYSERVER_PORT");
  port_ = (base != nullptr ? std::atoi(base) : 11380) + (::geteuid() == 0 ? 0 : 1);
  if (listening(port_))
    throw std::runtime_error("port " + std::to_string(port_) + " is taken: set -DCAPSA_TEST_KEYSERVER_PORT");
  // Debian's sks keeps its files under BASEDIR/var/{lib,log,run}/sks and serves
  // BASEDIR/var/lib/sks/www (where `keyserver login` finds a page that answers 200).
  namespace fs = std::filesystem;
  for (const char* sub : {"var/lib/sks/www", "var/log/sks", "var/run/sks", "dump"}) fs::create_directories(dir_ / sub);
  dir_.write("var/lib/sks/www/index.html", "<html><body>capsa test keyserver</body></html>\n");
  auto built = run_process({sks_binary(), "build", "-basedir", dir_.path(), "-stdoutlog"}, "", 60);
  if (built.exit_code != 0)
    throw std::runtime_error("sks build failed (install sks: scripts/install-deps.sh test): " + built.err + built.out);
  db_ = std::make_unique<Background>(
      std::vector<std::string>{sks_binary(), "db", "-basedir", dir_.path(), "-stdoutlog", "-hkp_address", "127.0.0.1",
                               "-hkp_port", std::to_string(port_)},
      dir_ / "db.err", false, dir_ / "db.log");
  if (!eventually([&] { return listening(port_) || db_->finished(); }, 30) || db_->finished())
    throw std::runtime_error("sks db did not start: " + log());
}

SksServer::~SksServer() {
  if (db_ && !db_->finished()) {
    db_->signal(SIGTERM);
    eventually([&] { return db_->finished(); }, 10);
  }
}

std::string SksServer::log() const {
  std::string text;
  for (const char* name : {"db.log", "db.err"}) {
    try {
      text += read_file(dir_ / name);
    } catch (const std::runtime_error&) {
      // not written yet
    }
  }
  return text;
}

}  // namespace capsa::test
