#pragma once
// CNI network configurations (the Container Network Interface specification, 1.0): the
// lists of plugins that make the networks `--network NAME` names, as a site keeps them in
// its `cni configuration path` (Apptainer's network/*.conflist), and what `--network-args`
// asks of them. Read here; run by container_network.hpp.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace capsa::runtime {

struct CniNetwork {
  std::string name;
  std::string cni_version;
  std::string file;                     // where it was read, for messages
  std::vector<nlohmann::json> plugins;  // each a plugin configuration object, "type" set
  // Whether one of the plugins declares the capability (portMappings, ipRanges...).
  bool has_capability(const std::string& capability) const;
};

// The network named `name` among the *.conflist, *.conf and *.json files of `directory`
// (a .conf or .json file holds a single plugin). Throws Error naming the directory when
// there is none, or the file and what is wrong with it when it is malformed.
CniNetwork load_cni_network(const std::string& directory, const std::string& name);

// What --network-args asks of one network: runtime configuration for the plugins that
// declare the capability, and CNI_ARGS for the rest (Apptainer's forms).
struct CniRequest {
  nlohmann::json port_mappings = nlohmann::json::array();  // portMappings entries
  nlohmann::json ip_ranges;                                // ipRanges, or null
  std::vector<std::pair<std::string, std::string>> args;   // CNI_ARGS, in order
};

// Parses the --network-args values for `networks` (loaded, in --network order). Each
// value is "[NETWORK:]KEY=VALUE[;KEY=VALUE...]"; without a network name it is the
// first network's. portmap=HOST[:CONTAINER]/tcp|udp and ipRange=CIDR become runtime
// configuration, any other KEY=VALUE a CNI argument (IP=10.22.0.5...). Throws Error
// naming the bad value.
std::vector<CniRequest> parse_network_args(const std::vector<std::string>& values,
                                           const std::vector<CniNetwork>& networks);

}  // namespace capsa::runtime
