#pragma once
// The networks `--net --network bridge,ptp...` give a container run by root: a network
// namespace of its own, attached to each named CNI network by the site's plugins
// (containernetworking-plugins: bridge, ptp, host-local, firewall, portmap...), one
// interface per network (eth0, eth1...), as Apptainer does. The attachments are undone
// (CNI DEL: addresses released, port mappings and firewall rules removed) by a process of
// their own once the container has ended, however it ends.
#include <string>
#include <vector>

#include "util/fd.hpp"

namespace capsa::runtime {

struct CniPaths {
  std::string configuration;  // the *.conflist files
  std::string plugins;        // the plugin programs
};

// Where a site keeps them: capsa.conf's cni configuration path and cni plugin path, else
// PREFIX/etc/capsa/network and the distribution's plugin folder.
CniPaths cni_paths(const std::string& configured_configuration, const std::string& configured_plugins);

class ContainerNetwork {
 public:
  // Call as root, in the host's mount and network namespaces, before the container's
  // namespaces are made. Makes the network namespace, attaches it to `networks` with
  // `network_args` (--network-args), and starts the process that detaches it when this
  // process (by then the container's command) has ended. Throws Error, with nothing left
  // attached, when a network cannot be found or a plugin fails.
  static ContainerNetwork attach(const std::vector<std::string>& networks, const std::vector<std::string>& network_args,
                                 const CniPaths& paths);

  // The namespace to join (setns) before the command runs.
  int namespace_fd() const { return namespace_.get(); }

 private:
  explicit ContainerNetwork(UniqueFd ns) : namespace_(std::move(ns)) {}
  UniqueFd namespace_;
};

// Whether `networks` (--network) asks for CNI: any name but "none".
bool needs_cni(const std::vector<std::string>& networks);

}  // namespace capsa::runtime
