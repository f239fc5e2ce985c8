#include "runtime/private_namespaces.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "runtime/instance_init.hpp"
#include "runtime/pid_namespace.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

// The loopback of a new network namespace starts down; Apptainer's "none" network
// brings it up so that services in the container can talk to each other.
void bring_up_loopback() {
  UniqueFd socket_fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!socket_fd) throw_errno("opening a socket to bring up the container's loopback");
  struct ifreq request {};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(socket_fd.get(), SIOCGIFFLAGS, &request) != 0) throw_errno("reading the loopback's flags");
  request.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (::ioctl(socket_fd.get(), SIOCSIFFLAGS, &request) != 0) throw_errno("bringing up the container's loopback");
}

void check_networks(const std::vector<std::string>& networks, bool privileged) {
  for (const std::string& network : networks) {
    if (network == "none") {
      if (networks.size() > 1) throw Error("--network none cannot be combined with other networks");
      continue;
    }
    if (!privileged)
      throw Error("--network " + network +
                  " needs root: CNI networks (bridge, ptp, ...) are set up by root only; use --network none for a "
                  "private network namespace with only a loopback, or leave out --net to use the host's network");
  }
}

void check_hostname(const std::string& hostname) {
  if (hostname.empty() || hostname.size() > 64 || hostname.find('/') != std::string::npos ||
      hostname.find('\0') != std::string::npos)
    throw Error("--hostname \"" + hostname + "\" is not a valid host name (1 to 64 characters, no '/')");
}

std::string resolv_conf_for(const std::vector<std::string>& dns) {
  std::string content;
  for (const std::string& address : dns) {
    unsigned char parsed[sizeof(struct in6_addr)];
    if (::inet_pton(AF_INET, address.c_str(), parsed) != 1 && ::inet_pton(AF_INET6, address.c_str(), parsed) != 1)
      throw Error("--dns: \"" + address + "\" is not a valid IP address");
    content += "nameserver " + address + "\n";
  }
  return content;
}

UniqueFd open_netns_path(const std::string& path, bool privileged) {
  if (!privileged)
    throw Error("--netns-path " + path + " needs root: capsa cannot join a network namespace from its user namespace");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("--netns-path " + path);
  return fd;
}

void enter_private_namespaces(const PrivateNamespaces& request) {
  if (request.netns_fd >= 0 && ::setns(request.netns_fd, CLONE_NEWNET) != 0)
    throw_errno("joining the network namespace " + request.netns_path);
  int flags = 0;
  if (request.ipc) flags |= CLONE_NEWIPC;
  if (request.uts) flags |= CLONE_NEWUTS;
  if (request.net) flags |= CLONE_NEWNET;
  if (flags != 0 && ::unshare(flags) != 0) throw_errno("creating the container's IPC, UTS or network namespace");
  if (request.uts && !request.hostname.empty() && ::sethostname(request.hostname.data(), request.hostname.size()) != 0)
    throw_errno("setting the container's host name to " + request.hostname);
  if (request.net) bring_up_loopback();
  if (request.pid && request.instance != nullptr)
    enter_instance_pid_namespace(*request.instance);
  else if (request.pid)
    enter_private_pid_namespace(request.init);
}

}  // namespace capsa::runtime
