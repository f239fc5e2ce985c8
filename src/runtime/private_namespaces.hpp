#pragma once
// The namespaces a container may ask for beyond the mount (and user) namespace:
// Apptainer's -p/--pid, -i/--ipc, --uts with --hostname, and -n/--net with
// --network none. By default they stay the host's: MPI and NCCL need the host's
// network and IPC (docs/running.md).
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace capsa::runtime {

struct InstanceSupervision;

struct PrivateNamespaces {
  bool pid = false;
  bool ipc = false;
  bool uts = false;
  bool net = false;
  bool init = true;      // with pid: a shim init as PID 1 (--no-init: the command is PID 1)
  std::string hostname;  // with uts: the container's host name ("" keeps the host's)
  std::string netns_path;  // --netns-path: join this network namespace (root only) instead
  int netns_fd = -1;       // netns_path opened on the host (open_netns_path): the container cannot see it
  InstanceSupervision* instance = nullptr;  // with pid: an instance's init and monitor (instance_init.hpp)

  bool any() const { return pid || ipc || uts || net || netns_fd >= 0; }
};

// The network types `--network` may name: "none" (a private namespace with its own
// loopback) alone, for anyone; CNI networks (bridge, ptp, ..., network/container_network.hpp)
// for root. Anything else is refused here, before anything is mounted, in one line.
void check_networks(const std::vector<std::string>& networks, bool privileged);

// Brings up the loopback of the network namespace this thread is in (a new one starts
// with it down).
void bring_up_loopback();

// Checks a --hostname value as sethostname(2) will take it (1 to 64 bytes, no '/' or
// NUL), so that a bad one fails before anything is mounted.
void check_hostname(const std::string& hostname);

// The resolv.conf --dns asks for: one "nameserver IP" line per address of the comma
// list. Throws Error naming an address that is not an IPv4 or IPv6 address.
std::string resolv_conf_for(const std::vector<std::string>& dns);

// Opens --netns-path before anything is mounted (the container's root does not show
// /run/netns): it needs root outside a user namespace (a namespace the host owns cannot
// be joined from capsa's own).
UniqueFd open_netns_path(const std::string& path, bool privileged);

// Call inside the container's root, with one thread, while the process still holds its
// capabilities in the container's user namespace (before exec). Joins --netns-path or
// enters the requested IPC, UTS and network namespaces, sets the host name, brings up the
// loopback, then the PID namespace (pid_namespace.hpp). Returns only in the command's
// process.
void enter_private_namespaces(const PrivateNamespaces& request);

}  // namespace capsa::runtime
