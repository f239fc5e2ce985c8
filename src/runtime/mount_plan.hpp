#pragma once
// What a container sees, as data: the list of mounts placed over the image root, built
// from the options and the host's state by a pure function, so it can be tested without
// privileges and printed with --debug. docs/running.md.
#include <string>
#include <vector>

#include "runtime/bind_spec.hpp"

namespace capsa::runtime {

struct MountStep {
  enum class Kind {
    Bind,           // source (host path) at target
    RecursiveBind,  // the same with every mount below source (/proc, /sys, /dev)
    Tmpfs,          // a fresh tmpfs at target
    SessionFile,    // a file capsa generated (passwd, group, resolv.conf, hostname): source names it in the session
    Devpts,         // a new devpts instance at target, and ptmx beside it linked to it (--contain)
  };
  Kind kind = Kind::Bind;
  std::string source;
  std::string target;  // absolute path inside the container
  bool read_only = false;
  bool directory = true;   // what to create in the image when target is missing
  bool required = true;    // false: skipped when the source does not exist on the host
  bool user_requested = false;  // home and -B binds: with --writable a missing target is an error


  bool operator==(const MountStep&) const = default;
};

// The system mounts `--no-mount` turns off (Apptainer's names; §1.2).
struct NoMount {
  bool proc = false, sys = false, dev = false, devpts = false, home = false, tmp = false, cwd = false;
  bool all_bind_paths = false;            // bind-paths: /etc/hosts, /etc/localtime, /etc/resolv.conf
  std::vector<std::string> bind_paths;    // absolute destinations of those, one by one
  bool operator==(const NoMount&) const = default;
};

// Parses `--no-mount` values (each may be a comma list). Unknown names are not errors in
// Apptainer: they come back in `unknown` for a warning.
NoMount parse_no_mount(const std::vector<std::string>& values, std::vector<std::string>* unknown = nullptr);

// Apptainer's default `bind path` entries, which the administrator's configuration replaces.
std::vector<BindSpec> default_bind_paths();

struct MountRequest {
  std::string home_source;       // the caller's home on the host
  std::string home_destination;  // where it appears (--home SRC:DEST), usually the same
  bool custom_home = false;      // --home given: bound even with --contain, as Apptainer does
  std::string cwd;               // the caller's working directory
  std::vector<BindSpec> binds;   // -B/--mount/APPTAINER_BIND, in order
  bool contain = false;          // --contain / --containall
  bool minimal_dev = false;      // `mount dev = minimal`: the --contain /dev without --contain
  std::vector<BindSpec> bind_paths = default_bind_paths();  // the configuration's `bind path`
  bool no_home = false;          // --no-home
  std::string workdir;           // --workdir: backs /tmp, /var/tmp (and home with --contain)
  NoMount no_mount;              // --no-mount
  bool generated_resolv_conf = false;  // --dns: /etc/resolv.conf is capsa's, not the host's
  bool generated_hostname = false;     // --hostname: /etc/hostname names it
  std::vector<std::string> scratch;    // -S/--scratch: absolute paths that get a fresh directory each
  std::vector<std::string> libraries;  // --containlibs: host files bound into /.singularity.d/libs
};

std::vector<MountStep> plan_mounts(const MountRequest& request);

// One line per step, for --debug: "bind /scratch/data -> /data (ro)".
std::string describe(const std::vector<MountStep>& steps);

}  // namespace capsa::runtime
