#pragma once
// The /.singularity.d tree of a built stage (docs/build.md, docs/running.md):
// the base layout before %post, then what the definition's sections make of it after.
// Written from a child that chroots into the sandbox as the build's root, so that a
// symlink in the image can never redirect a write onto the host.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "build/definition.hpp"
#include "runtime/sandbox_run.hpp"

namespace capsa::build {

struct StageContext {
  std::string architecture;    // Go name: amd64, arm64, ...
  std::int64_t time = 0;
  std::string capsa_version;
  std::string base_reference;  // docker: the image reference; "" otherwise
  bool force = false;          // --force: %labels replace the base image's labels
  std::set<std::string> sections;  // --section; empty = all
};

bool section_enabled(const std::set<std::string>& sections, const std::string& name);

// Directories, action scripts and env files every image has; only what is missing is
// created (a docker base already has them). Also env/91-environment.sh for %post.
void prepare_base_layout(runtime::RootMode mode, const std::string& rootfs);

// After %post: runscript, startscript, test, runscript.help, env/90-environment.sh,
// labels.json and the Singularity definition (an earlier one moves to bootstrap_history/).
// A label the base image has and --force does not replace is a warning printed by the child.
void write_stage_metadata(runtime::RootMode mode, const std::string& rootfs, const Stage& stage,
                          const StageContext& context);

// Script file of %runscript/%startscript/%test: the section's own #! line or #!/bin/sh,
// the section arguments appended to it, a blank line, the body.
std::string script_file(const Script& script);

// The labels Apptainer adds to every build, without the user's %labels.
std::map<std::string, std::string> automatic_labels(const Stage& stage, const StageContext& context);

// Writes (replacing) or removes one file inside the sandbox, as the build's root.
void put_file_in_root(runtime::RootMode mode, const std::string& rootfs, const std::string& path,
                      const std::string& content, unsigned file_mode);
void remove_file_in_root(runtime::RootMode mode, const std::string& rootfs, const std::string& path);

}  // namespace capsa::build
