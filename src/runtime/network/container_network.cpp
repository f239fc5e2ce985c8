#include "runtime/network/container_network.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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
void close_all_but(const std::vector<int>& kept) {
  std::vector<int> open;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(dir)) {
      const int fd = std::atoi(entry->d_name);
      if (fd > 2 && fd != ::dirfd(dir) && std::find(kept.begin(), kept.end(), fd) == kept.end()) open.push_back(fd);
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

// Whether a plugin run for `container_id` is still going: one that capsa started before
// it was killed goes on as an orphan, and a DEL that ran before its ADD ended would undo
// nothing of what it then does. Root reads every process's environment.
bool plugin_still_running(const std::string& container_id) {
  const std::string marker = "CNI_CONTAINERID=" + container_id;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return false;
  bool found = false;
  while (const dirent* entry = ::readdir(proc)) {
    if (found || entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
    std::ifstream environ(std::string("/proc/") + entry->d_name + "/environ", std::ios::binary);
    std::string variable;
    while (!found && std::getline(environ, variable, '\0')) found = variable == marker;
  }
  ::closedir(proc);
  return found;
}

// One line per attached network: "INDEX RESULT-JSON". A single write: the reader is
// another process, and a pipe keeps writes of up to PIPE_BUF whole.
void report_result(int fd, std::size_t index, const json& result) {
  const std::string line = std::to_string(index) + " " + result.dump() + "\n";
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw_errno("reporting the network's result to the process that detaches it");
}

// What the attaching process reported before it ended (never blocks: it has ended).
void read_results(int fd, std::vector<Attachment>& attachments) {
  ::fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (std::size_t end = text.find('\n'); end != std::string::npos; start = end + 1, end = text.find('\n', start)) {
    const std::string line = text.substr(start, end - start);
    const std::size_t space = line.find(' ');
    const std::size_t index = std::strtoul(line.c_str(), nullptr, 10);
    if (space == std::string::npos || index >= attachments.size()) continue;
    try {
      attachments[index].result = json::parse(line.substr(space + 1));
    } catch (const json::exception&) {
    }
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
  const std::string container_id = unique_container_id();
  // The process that detaches starts before anything is attached, so that capsa killed at
  // any moment from here on leaves nothing behind. It waits for this process (by then the
  // container's command) to end, holding the namespace so that DEL finds the interfaces
  // ADD made, then detaches every network, with the results ADD reported through `results`
  // (a network whose ADD never finished is detached without one: DEL tolerates that).
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw_errno("creating a pipe for the network results");
  UniqueFd results_in(pipe_fds[0]), results_out(pipe_fds[1]);
  const EndWatch end = EndWatch::of_this_process();
  ChildOptions options;
  options.name = "the process that detaches the container's networks";
  const int ns_fd = ns.get();
  const int in_fd = results_in.get();
  Process starter = DetachedChild::start_unreported(
      [&]() {
        close_all_but({ns_fd, end.descriptor(), in_fd});
        // Ctrl-C and the job's signals end the container; this process must still undo.
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::signal(sig, SIG_IGN);
        end.await();
        for (int wait = 0; wait < 100 && plugin_still_running(container_id); ++wait) ::usleep(100'000);
        std::vector<Attachment> done = attachments;
        read_results(in_fd, done);
        const Invocation later{paths, container_id,
                               "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(ns_fd)};
        detach_all(later, done);
        return 0;
      },
      options);
  starter.wait();
  results_in.reset();

  const Invocation call{paths, container_id, "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(ns.get())};
  for (std::size_t i = 0; i < attachments.size(); ++i) {
    attach_one(call, attachments[i]);  // a failure ends capsa, and the detaching follows
    report_result(results_out.get(), i, attachments[i].result);
  }
  return ContainerNetwork(std::move(ns));
}

}  // namespace capsa::runtime
