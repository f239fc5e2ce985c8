#include "runtime/network/cni_config.hpp"

#include <arpa/inet.h>
#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

#include "util/error.hpp"

namespace capsa::runtime {
namespace {

using nlohmann::json;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> configuration_files(const std::string& directory) {
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr)
    throw_errno("the CNI configuration path " + directory + " (cni configuration path in capsa.conf)");
  std::vector<std::string> files;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (ends_with(name, ".conflist") || ends_with(name, ".conf") || ends_with(name, ".json"))
      files.push_back(std::string(directory).append("/").append(name));
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end());  // as libcni: the first file of a name wins
  return files;
}

// A network from one file, or nullopt when the file names another network.
std::optional<CniNetwork> read_network(const std::string& file, const std::string& wanted) {
  std::ifstream in(file);
  if (!in) throw_errno(file);
  std::stringstream text;
  text << in.rdbuf();
  json document;
  try {
    document = json::parse(text.str());
  } catch (const json::exception& e) {
    throw Error(file + ": not a CNI network configuration (" + e.what() + ")");
  }
  if (!document.is_object() || !document.contains("name") || !document["name"].is_string())
    throw Error(file + ": a CNI network configuration needs a \"name\"");
  if (document["name"] != wanted) return std::nullopt;
  CniNetwork network;
  network.name = wanted;
  network.file = file;
  network.cni_version = document.value("cniVersion", "");
  if (network.cni_version.empty()) throw Error(file + ": a CNI network configuration needs a \"cniVersion\"");
  if (ends_with(file, ".conflist")) {
    if (!document.contains("plugins") || !document["plugins"].is_array() || document["plugins"].empty())
      throw Error(file + ": a .conflist needs a non-empty \"plugins\" list");
    for (const json& plugin : document["plugins"]) network.plugins.push_back(plugin);
  } else {
    network.plugins.push_back(document);  // a single plugin, the network's own keys beside its type
  }
  const bool typed = std::all_of(network.plugins.begin(), network.plugins.end(), [](const json& plugin) {
    return plugin.is_object() && plugin.contains("type") && plugin["type"].is_string() &&
           plugin["type"].get<std::string>().find('/') == std::string::npos;
  });
  if (!typed) throw Error(file + ": every plugin of network " + wanted + " needs a \"type\" naming a program");
  return network;
}

int port_number(const std::string& text, const std::string& what, const std::string& value) {
  int port = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (error != std::errc{} || end != text.data() + text.size() || port <= 0 || port > 65535)
    throw Error("--network-args portmap=" + value + ": the " + what + " port must be a number from 1 to 65535");
  return port;
}

[[noreturn]] void refuse_argument(const std::string& value, const std::string& why) {
  throw Error("--network-args " + value + ": " + why);
}

json port_mapping(const std::string& value) {
  const std::size_t slash = value.find('/');
  if (slash == std::string::npos)
    throw Error("--network-args portmap=" + value +
                ": badly formatted, it must be portmap=hostPort:containerPort/protocol (or hostPort/protocol)");
  const std::string protocol = value.substr(slash + 1);
  if (protocol != "tcp" && protocol != "udp")
    throw Error("--network-args portmap=" + value + ": only tcp and udp protocol can be specified");
  const std::string ports = value.substr(0, slash);
  const std::size_t colon = ports.find(':');
  const int host = port_number(ports.substr(0, colon), "host", value);
  const int container = colon == std::string::npos ? host : port_number(ports.substr(colon + 1), "container", value);
  return json{{"hostPort", host}, {"containerPort", container}, {"protocol", protocol}};
}

json ip_range(const std::string& value) {
  const std::size_t slash = value.find('/');
  unsigned char address[16];
  const std::string host = value.substr(0, slash);
  const bool valid = slash != std::string::npos && (::inet_pton(AF_INET, host.c_str(), address) == 1 ||
                                                    ::inet_pton(AF_INET6, host.c_str(), address) == 1);
  if (!valid) throw Error("--network-args ipRange=" + value + ": not a subnet in CIDR form (10.22.1.0/24)");
  return json::array({json::array({json{{"subnet", value}}})});
}

}  // namespace

bool CniNetwork::has_capability(const std::string& capability) const {
  return std::any_of(plugins.begin(), plugins.end(), [&](const json& plugin) {
    const json& capabilities = plugin.value("capabilities", json::object());
    return capabilities.is_object() && capabilities.value(capability, false) == true;
  });
}

CniNetwork load_cni_network(const std::string& directory, const std::string& name) {
  for (const std::string& file : configuration_files(directory))
    if (std::optional<CniNetwork> network = read_network(file, name)) return *network;
  throw Error("--network " + name + ": no network of that name in " + directory +
              " (its *.conflist files name the networks; the cni configuration path of capsa.conf says where)");
}

std::vector<CniRequest> parse_network_args(const std::vector<std::string>& values,
                                           const std::vector<CniNetwork>& networks) {
  std::vector<CniRequest> requests(networks.size());
  for (const std::string& value : values) {
    // "NETWORK:" only before the first '=': portmap=8080:80/tcp has a ':' of its own.
    std::size_t index = 0;
    std::string pairs = value;
    const std::size_t colon = value.find(':');
    if (colon != std::string::npos && colon < value.find('=')) {
      const std::string network = value.substr(0, colon);
      auto found =
          std::find_if(networks.begin(), networks.end(), [&](const CniNetwork& n) { return n.name == network; });
      if (found == networks.end()) refuse_argument(value, "network " + network + " was not given with --network");
      index = static_cast<std::size_t>(found - networks.begin());
      pairs = value.substr(colon + 1);
    }
    std::stringstream list(pairs);
    std::string pair;
    while (std::getline(list, pair, ';')) {
      const std::size_t equals = pair.find('=');
      if (equals == std::string::npos || equals == 0 || pair.find('=', equals + 1) != std::string::npos)
        refuse_argument(value, "\"" + pair + "\" is not KEY=VALUE");
      const std::string key = pair.substr(0, equals), setting = pair.substr(equals + 1);
      const CniNetwork& network = networks[index];
      if (key == "portmap") {
        if (!network.has_capability("portMappings"))
          refuse_argument(value, "network " + network.name + " has no portMappings capability");
        requests[index].port_mappings.push_back(port_mapping(setting));
      } else if (key == "ipRange") {
        if (!network.has_capability("ipRanges"))
          refuse_argument(value, "network " + network.name + " has no ipRanges capability");
        requests[index].ip_ranges = ip_range(setting);
      } else {
        if (key.find_first_of(" ;\n") != std::string::npos || setting.find_first_of(";\n") != std::string::npos)
          refuse_argument(value, "a CNI argument holds no ';' or spaces");
        requests[index].args.emplace_back(key, setting);
      }
    }
  }
  return requests;
}

}  // namespace capsa::runtime
