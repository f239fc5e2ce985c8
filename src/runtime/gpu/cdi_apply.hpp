#pragma once
// What the edits of the CDI devices asked for do to a capsa container (docs/gpu.md):
//   deviceNodes  the host node (hostPath, else path) bound at path; its type and numbers
//                must match what the spec says. A bind gives the host node's own mode and
//                owner: fileMode, uid, gid and the cgroup permissions are not applied.
//   mounts       bind mounts (options bind/rbind, ro; nosuid always); other types refused.
//   env          set in the container, also with --cleanenv.
//   hooks        run with the spec's args and env (nothing else inherited) and the OCI
//                state on stdin: prestart, createRuntime and createContainer hooks on the
//                mounted root before capsa enters it (bundle/config.json names it, as
//                nvidia-ctk's hooks read it), startContainer hooks in the container before
//                the command. poststart and poststop are refused: capsa becomes the command.
// Everything that can be checked is checked before anything is mounted.
#include <string>
#include <utility>
#include <vector>

#include "runtime/gpu/cdi_registry.hpp"
#include "runtime/mount_plan.hpp"

namespace capsa::runtime::gpu {

struct CdiHookCall {
  std::string origin;  // "createContainer hook of nvidia.com/gpu=0 (/etc/cdi/nvidia.yaml)"
  CdiHook hook;
};

struct CdiPlan {
  std::vector<MountStep> steps;
  std::vector<std::pair<std::string, std::string>> env;  // in order; a later one wins
  std::vector<CdiHookCall> root_hooks;                   // prestart, createRuntime, createContainer
  std::vector<CdiHookCall> start_hooks;                  // startContainer
  std::vector<std::string> warnings;
  bool writes_root() const { return !root_hooks.empty(); }  // hooks may change the root: make it writable
};

// `contain`: /dev is capsa's tmpfs (else the host's /dev is bound whole, and a node must
// be at its own path there). `dev_dir` stands for the host's /dev in that check (tests).
CdiPlan plan_cdi(const std::vector<CdiSelection>& selections, bool contain, const std::string& dev_dir = "/dev");

// Writes SESSION/bundle/config.json naming `root` (the mounted root before capsa enters
// it), the OCI bundle hooks find the root through; returns the bundle directory.
std::string write_cdi_bundle(const std::string& session, const std::string& root);

// Runs `hooks` in order with the OCI state ({"status": `status`, "pid": this process, which
// becomes the command, "bundle": `bundle`...}) on stdin. Throws Error naming the hook when
// one cannot run, fails, or outlives its timeout.
void run_cdi_hooks(const std::vector<CdiHookCall>& hooks, const std::string& bundle, const std::string& status);

}  // namespace capsa::runtime::gpu
