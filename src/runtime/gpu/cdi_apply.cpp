#include "runtime/gpu/cdi_apply.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/run_program.hpp"

namespace capsa::runtime::gpu {
namespace {

// A later edit for the same container path replaces the earlier one, as the reference
// library's spec editor does (a node both "0" and "all" list, asked for twice).
void put(CdiPlan& plan, MountStep step) {
  std::erase_if(plan.steps, [&](const MountStep& earlier) { return earlier.target == step.target; });
  plan.steps.push_back(std::move(step));
}

char node_type(mode_t mode) {
  if (S_ISCHR(mode)) return 'c';
  if (S_ISBLK(mode)) return 'b';
  if (S_ISFIFO(mode)) return 'p';
  return 0;
}

std::string numbers(char type, dev_t rdev) {
  return std::string(1, type) + " " + std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev));
}

// The host node checked against the spec, then bound at its path.
void add_device_node(const CdiDeviceNode& node, const std::string& origin, bool contain, const std::string& dev_dir,
                     CdiPlan& plan) {
  const std::string source = node.host_path.empty() ? node.path : node.host_path;
  const std::string what = origin + ": device node " + node.path;
  struct stat st {};
  if (::stat(source.c_str(), &st) != 0) throw Error(what + ": " + source + " is not on this host");
  const char type = node_type(st.st_mode);
  if (type == 0) throw Error(what + ": " + source + " is not a device node");
  const char wanted = node.type == "u" ? 'c' : node.type.empty() ? type : node.type[0];
  if (wanted != type || (node.major && *node.major != 0 && static_cast<unsigned>(*node.major) != major(st.st_rdev)) ||
      (node.minor && node.major && *node.major != 0 && static_cast<unsigned>(*node.minor) != minor(st.st_rdev)))
    throw Error(what + ": the spec says " + std::string(1, wanted) +
                (node.major ? " " + std::to_string(*node.major) + ":" + std::to_string(node.minor.value_or(0)) : "") +
                ", " + source + " is " + numbers(type, st.st_rdev));
  if (node.path.rfind("/dev/", 0) == 0 && !contain) {
    // The host's /dev is bound whole: the node must be there already, at its own path.
    struct stat there {};
    const std::string in_dev = dev_dir + node.path.substr(4);
    if (::stat(in_dev.c_str(), &there) == 0 && there.st_rdev == st.st_rdev && node_type(there.st_mode) == type) return;
    throw Error(what +
                ": the host's /dev is in the container whole and has no such node there; run with --contain "
                "to place it from " +
                source);
  }
  MountStep step{MountStep::Kind::Bind, source, node.path};
  step.directory = false;
  put(plan, step);
}

void add_mount(const CdiMount& mount, const std::string& origin, CdiPlan& plan) {
  const std::string what = origin + ": mount " + mount.container_path;
  auto has = [&](const char* option) {
    return std::find(mount.options.begin(), mount.options.end(), option) != mount.options.end();
  };
  const bool bind = has("bind") || has("rbind");
  if (!bind && !mount.type.empty() && mount.type != "bind" && mount.type != "none")
    throw Error(what + ": mount type \"" + mount.type + "\" is not supported (capsa makes bind mounts only)");
  if (mount.container_path[0] != '/') throw Error(what + ": containerPath must be absolute");
  if (::access(mount.host_path.c_str(), F_OK) != 0) throw Error(what + ": " + mount.host_path + " is not on this host");
  MountStep step{has("rbind") ? MountStep::Kind::RecursiveBind : MountStep::Kind::Bind, mount.host_path,
                 mount.container_path};
  step.read_only = has("ro");
  step.user_requested = true;  // with --writable a missing target is an error, as for -B
  put(plan, step);
}

void add_hook(const CdiHook& hook, const std::string& origin, CdiPlan& plan) {
  const std::string what = hook.hook_name + " hook of " + origin;
  if (hook.hook_name == "poststart" || hook.hook_name == "poststop")
    throw Error(what + ": not supported (capsa becomes the command and keeps no process to run it afterwards)");
  if (hook.hook_name == "startContainer") {  // its path is the container's: checked when it runs
    plan.start_hooks.push_back({what, hook});
    return;
  }
  if (::access(hook.path.c_str(), X_OK) != 0) {
    const std::string program = hook.path.substr(hook.path.find_last_of('/') + 1);
    const bool nvidia = program == "nvidia-ctk" || program == "nvidia-cdi-hook";
    throw Error(what + ": " + hook.path + " is not an executable program on this host" +
                (nvidia
                     ? " (install the NVIDIA Container Toolkit, or regenerate the spec with `nvidia-ctk cdi generate`)"
                     : ""));
  }
  plan.root_hooks.push_back({what, hook});
}

}  // namespace

CdiPlan plan_cdi(const std::vector<CdiSelection>& selections, bool contain, const std::string& dev_dir) {
  CdiPlan plan;
  for (const CdiSelection& s : selections) {
    if (s.edits.intel_rdt) throw Error(s.origin + ": intelRdt is not supported (capsa sets up no resctrl group)");
    if (s.edits.net_devices)
      throw Error(s.origin + ": netDevices is not supported (capsa moves no network interfaces)");
    for (const std::string& e : s.edits.env) {
      auto equals = e.find('=');
      plan.env.emplace_back(e.substr(0, equals), e.substr(equals + 1));
    }
    for (const CdiDeviceNode& node : s.edits.device_nodes) add_device_node(node, s.origin, contain, dev_dir, plan);
    for (const CdiMount& mount : s.edits.mounts) add_mount(mount, s.origin, plan);
    if (std::any_of(s.edits.additional_gids.begin(), s.edits.additional_gids.end(), [](auto gid) { return gid != 0; }))
      plan.warnings.push_back(s.origin + ": additionalGids ignored (the command keeps the caller's groups)");
  }
  // OCI order: every prestart and createRuntime hook before the createContainer ones.
  for (const char* stage : {"prestart", "createRuntime", "createContainer", "startContainer"})
    for (const CdiSelection& s : selections)
      for (const CdiHook& hook : s.edits.hooks)
        if (hook.hook_name == stage) add_hook(hook, s.origin, plan);
  for (const CdiSelection& s : selections)
    for (const CdiHook& hook : s.edits.hooks)
      if (hook.hook_name == "poststart" || hook.hook_name == "poststop") add_hook(hook, s.origin, plan);
  return plan;
}

std::string write_cdi_bundle(const std::string& session, const std::string& root) {
  std::string bundle = session + "/bundle";
  if (::mkdir(bundle.c_str(), 0700) != 0 && errno != EEXIST) throw_errno(bundle);
  nlohmann::json config = {{"ociVersion", "1.0.2"}, {"root", {{"path", root}, {"readonly", false}}}};
  std::ofstream out(bundle + "/config.json");
  out << config.dump() << "\n";
  if (!out.flush()) throw Error("cannot write " + bundle + "/config.json");
  return bundle;
}

void run_cdi_hooks(const std::vector<CdiHookCall>& hooks, const std::string& bundle, const std::string& status) {
  const nlohmann::json state = {{"ociVersion", "1.0.2"},
                                {"id", "capsa-" + std::to_string(::getpid())},
                                {"status", status},
                                {"pid", ::getpid()},
                                {"bundle", bundle}};
  for (const CdiHookCall& call : hooks) {
    const CdiHook& hook = call.hook;
    if (::access(hook.path.c_str(), X_OK) != 0)
      throw Error(call.origin + ": " + hook.path + " is not an executable program in the container");
    Command command;
    command.program = hook.path;
    command.argv = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
    command.env = hook.env;
    CaptureLimits limits;
    limits.timeout = hook.timeout ? std::chrono::milliseconds(std::chrono::seconds(*hook.timeout))
                                  : std::chrono::milliseconds(std::chrono::hours(24));
    log::debug({"running the ", call.origin, ": ", hook.path});
    Captured result;
    try {
      result = run_captured(command, state.dump(), limits);
    } catch (const Error& e) {
      throw Error(call.origin + ": " + e.what());
    }
    if (!result.out.empty()) log::debug({hook.path, " said: ", result.out});
    if (!result.status.success()) {
      std::string said = result.err;
      while (!said.empty() && said.back() == '\n') said.pop_back();
      said = said.substr(said.find_last_of('\n') == std::string::npos ? 0 : said.find_last_of('\n') + 1);
      throw Error(call.origin + ": " + hook.path + " failed (exit status " + std::to_string(result.status.code()) +
                  ")" + (said.empty() ? "" : ": " + said));
    }
  }
}

}  // namespace capsa::runtime::gpu
