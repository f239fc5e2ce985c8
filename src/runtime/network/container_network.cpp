#include "runtime/network/container_network.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "runtime/network/cni_config.hpp"
#include "runtime/private_namespaces.hpp"
#include "util/detached_child.hpp"
#include "util/error.hpp"
#include "util/install_layout.hpp"
#include "util/log.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime {
namespace {

using nlohmann::json;

// Debian's containernetworking-plugins; Apptainer's own build puts them in its libexec.
constexpr const char* kDistributionPlugins = "/usr/lib/cni";
// A plugin that has not answered by then is stuck (Apptainer allows 5 seconds).
constexpr std::chrono::seconds kPluginTimeout{10};

struct Attachment {
  CniNetwork network;
  CniRequest request;
  std::string interface;
  json result;  // what the last plugin of ADD returned (the prevResult of every DEL)
};

struct Invocation {
  const CniPaths& paths;
  std::string container_id;
  std::string netns_path;  // /proc/PID/fd/N of the process holding the namespace
};

std::string unique_container_id() {
  unsigned char bytes[6] = {};
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) throw_errno("getrandom");
  char hex[2 * sizeof bytes + 1];
  for (std::size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return "capsa-" + std::to_string(::getpid()) + "-" + hex;
}

std::string cni_args(const CniRequest& request) {
  // Plugins refuse CNI_ARGS they do not know unless told to ignore them (IP= reaches
  // host-local through bridge).
  std::string text = "IgnoreUnknown=1";
  for (const auto& [key, value] : request.args) text.append(";").append(key).append("=").append(value);
  return text;
}

json plugin_input(const Attachment& attachment, const json& plugin, const json& previous) {
  json input = plugin;
  input["name"] = attachment.network.name;
  input["cniVersion"] = attachment.network.cni_version;
  if (!previous.is_null()) input["prevResult"] = previous;
  json runtime = json::object();
  const json capabilities = plugin.value("capabilities", json::object());
  if (capabilities.value("portMappings", false) && !attachment.request.port_mappings.empty())
    runtime["portMappings"] = attachment.request.port_mappings;
  if (capabilities.value("ipRanges", false) && !attachment.request.ip_ranges.is_null())
    runtime["ipRanges"] = attachment.request.ip_ranges;
  if (!runtime.empty()) input["runtimeConfig"] = runtime;
  return input;
}

// The plugin's own words for a failure: the CNI error object on stdout, else stderr.
std::string failure_of(const Captured& run) {
  try {
    const json error = json::parse(run.out);
    std::string why = error.value("msg", "");
    const std::string details = error.value("details", "");
    if (!details.empty()) why += " (" + details + ")";
    if (!why.empty()) return why;
  } catch (const json::exception&) {
  }
  const std::string err = run.err.substr(0, run.err.find('\n'));
  return !err.empty() ? err : "exit status " + std::to_string(run.status.code());
}

// Runs one plugin of `attachment` for `command` (ADD or DEL); returns its result (ADD).
json run_plugin(const Invocation& call, const std::string& command, const Attachment& attachment, const json& plugin,
                const json& previous) {
  const std::string type = plugin["type"];
  const std::string program = call.paths.plugins + "/" + type;
  if (::access(program.c_str(), X_OK) != 0)
    throw Error("--network " + attachment.network.name + ": the CNI plugin " + type + " is not in " +
                call.paths.plugins + " (install containernetworking-plugins, or set cni plugin path in capsa.conf)");
  Command plugin_command;
  plugin_command.argv = {program};
  plugin_command.env = std::vector<std::string>{"CNI_COMMAND=" + command,
                                                "CNI_CONTAINERID=" + call.container_id,
                                                "CNI_NETNS=" + call.netns_path,
                                                "CNI_IFNAME=" + attachment.interface,
                                                "CNI_ARGS=" + cni_args(attachment.request),
                                                "CNI_PATH=" + call.paths.plugins,
                                                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  CaptureLimits limits;
  limits.timeout = kPluginTimeout;
  const Captured run = run_captured(plugin_command, plugin_input(attachment, plugin, previous).dump(), limits);
  if (!run.status.success())
    throw Error("--network " + attachment.network.name + ": the CNI plugin " + type + " could not " +
                (command == "ADD" ? "attach" : "detach") + " the container: " + failure_of(run));
  if (command != "ADD") return previous;
  try {
    return json::parse(run.out);
  } catch (const json::exception&) {
    throw Error("--network " + attachment.network.name + ": the CNI plugin " + type + " printed no result");
  }
}

void attach_one(const Invocation& call, Attachment& attachment) {
  json result;
  for (const json& plugin : attachment.network.plugins) result = run_plugin(call, "ADD", attachment, plugin, result);
  attachment.result = result;
}

// DEL for every plugin of every attachment, last first; goes on past failures (each is
// reported: an address or a rule left behind should be known).
void detach_all(const Invocation& call, const std::vector<Attachment>& attachments) {
  for (std::size_t a = attachments.size(); a-- > 0;) {
    const Attachment& attachment = attachments[a];
    for (std::size_t p = attachment.network.plugins.size(); p-- > 0;) try {
        run_plugin(call, "DEL", attachment, attachment.network.plugins[p], attachment.result);
      } catch (const Error& e) {
        log::warning(e.what());
      }
  }
}

// A new network namespace with its loopback up, this thread back in the host's.
UniqueFd make_network_namespace() {
  UniqueFd host(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!host) throw_errno("opening the host's network namespace");
  if (::unshare(CLONE_NEWNET) != 0) throw_errno("creating the container's network namespace");
  UniqueFd made(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  const int open_error = errno;
  std::string failure;
  try {
    bring_up_loopback();
  } catch (const Error& e) {
    failure = e.what();
  }
  if (::setns(host.get(), CLONE_NEWNET) != 0) throw_errno("returning to the host's network namespace");
  if (!made) {
    errno = open_error;
    throw_errno("opening the container's network namespace");
  }
  if (!failure.empty()) throw Error(failure);
  return made;
}

// In the process that detaches the container: only what it needs stays open.
void close_all_but(int kept_a, int kept_b) {
  std::vector<int> open;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(dir)) {
      const int fd = std::atoi(entry->d_name);
      if (fd > 2 && fd != kept_a && fd != kept_b && fd != ::dirfd(dir)) open.push_back(fd);
    }
    ::closedir(dir);
  }
  for (int fd : open) ::close(fd);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);  // the caller's stdout sees its end when the command ends
    ::close(null);
  }
}

}  // namespace

CniPaths cni_paths(const std::string& configured_configuration, const std::string& configured_plugins) {
  CniPaths paths;
  paths.configuration = configured_configuration;
  if (paths.configuration.empty()) {
    const std::vector<std::string> candidates = config_candidates("network");
    const std::string found = first_readable(candidates);
    paths.configuration = !found.empty() ? found : candidates.back();
  }
  paths.plugins = configured_plugins.empty() ? kDistributionPlugins : configured_plugins;
  return paths;
}

bool needs_cni(const std::vector<std::string>& networks) {
  for (const std::string& network : networks)
    if (network != "none") return true;
  return false;
}

ContainerNetwork ContainerNetwork::attach(const std::vector<std::string>& networks,
                                          const std::vector<std::string>& network_args, const CniPaths& paths) {
  std::vector<CniNetwork> loaded;
  loaded.reserve(networks.size());
  for (const std::string& name : networks) loaded.push_back(load_cni_network(paths.configuration, name));
  const std::vector<CniRequest> requests = parse_network_args(network_args, loaded);
  std::vector<Attachment> attachments;
  for (std::size_t i = 0; i < loaded.size(); ++i)
    attachments.push_back({loaded[i], requests[i], "eth" + std::to_string(i), nullptr});

  UniqueFd ns = make_network_namespace();
  const Invocation call{paths, unique_container_id(),
                        "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(ns.get())};
  std::vector<Attachment> attached;
  try {
    for (Attachment& attachment : attachments) {
      attached.push_back(attachment);
      attach_one(call, attached.back());
    }
  } catch (const Error&) {
    detach_all(call, attached);  // the one that failed too: its first plugins may have done their part
    throw;
  }
  // Undone once this process, by then the container's command, has ended; the detaching
  // process holds the namespace until then, so DEL finds the interfaces it made.
  const EndWatch end = EndWatch::of_this_process();
  ChildOptions options;
  options.name = "the process that detaches the container's networks";
  const int ns_fd = ns.get();
  Process starter = DetachedChild::start_unreported(
      [&]() {
        close_all_but(ns_fd, end.descriptor());
        // Ctrl-C and the job's signals end the container; this process must still undo.
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::signal(sig, SIG_IGN);
        end.await();
        const Invocation later{paths, call.container_id,
                               "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(ns_fd)};
        detach_all(later, attached);
        return 0;
      },
      options);
  starter.wait();
  return ContainerNetwork(std::move(ns));
}

}  // namespace capsa::runtime
