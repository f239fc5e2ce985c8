#include "runtime/mount_plan.hpp"

#include <algorithm>
#include <string_view>

namespace capsa::runtime {
namespace {

bool is_under(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

MountStep bind(std::string source, std::string target, bool read_only = false) {
  MountStep step;
  step.source = std::move(source);
  step.target = std::move(target);
  step.read_only = read_only;
  return step;
}

MountStep host_file(const std::string& path) {
  MountStep step = bind(path, path);
  step.directory = false;
  step.required = false;
  return step;
}

// A file capsa writes into the session, named after its place in /etc ("/etc/passwd"
// -> "passwd"), bound over the image's.
MountStep session_file(const std::string& path) {
  MountStep step{MountStep::Kind::SessionFile, path.substr(path.rfind('/') + 1), path};
  step.directory = false;
  return step;
}

MountStep user_bind(std::string source, std::string target, bool read_only = false) {
  MountStep step = bind(std::move(source), std::move(target), read_only);
  step.user_requested = true;
  return step;
}

bool skipped_bind_path(const NoMount& no, const std::string& destination) {
  if (no.all_bind_paths) return true;
  for (const std::string& path : no.bind_paths)
    if (path == destination) return true;
  return false;
}

}  // namespace

NoMount parse_no_mount(const std::vector<std::string>& values, std::vector<std::string>* unknown) {
  NoMount no;
  for (const std::string& value : values) {
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t end = value.find(',', start);
      if (end == std::string::npos) end = value.size();
      std::string name = value.substr(start, end - start);
      start = end + 1;
      if (name.empty()) continue;
      if (name == "proc") no.proc = true;
      else if (name == "sys") no.sys = true;
      else if (name == "dev") no.dev = true;
      else if (name == "devpts") no.devpts = true;
      else if (name == "home") no.home = true;
      else if (name == "tmp") no.tmp = true;
      else if (name == "cwd") no.cwd = true;
      else if (name == "hostfs") {}  // capsa never mounts the host's file systems (Apptainer's default)
      else if (name == "bind-paths") no.all_bind_paths = true;
      else if (name[0] == '/') no.bind_paths.push_back(name);
      else if (unknown) unknown->push_back(name);
    }
  }
  return no;
}

std::vector<BindSpec> default_bind_paths() {
  std::vector<BindSpec> binds(2);
  binds[0].source = binds[0].destination = "/etc/localtime";
  binds[1].source = binds[1].destination = "/etc/hosts";
  return binds;
}

std::vector<MountStep> plan_mounts(const MountRequest& r) {
  std::vector<MountStep> steps;
  auto add = [&](MountStep step) { steps.push_back(std::move(step)); };
  const NoMount& no = r.no_mount;

  // The host's devices stay visible (GPUs, InfiniBand) unless contained.
  if (!no.proc) add(MountStep{MountStep::Kind::RecursiveBind, "/proc", "/proc"});
  if (!no.sys) add(MountStep{MountStep::Kind::RecursiveBind, "/sys", "/sys"});
  if (no.dev) {
    // --no-mount dev: the image's own /dev, as Apptainer leaves it.
  } else if (r.contain || r.minimal_dev) {
    add(MountStep{MountStep::Kind::Tmpfs, "", "/dev"});
    for (const char* device : {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}) {
      MountStep step = host_file(device);
      add(step);
    }
    // A pseudo-terminal instance of its own, with /dev/ptmx, as Apptainer's minimal /dev;
    // --no-mount devpts leaves it out (the full /dev is the host's and keeps its own).
    if (!no.devpts) add(MountStep{MountStep::Kind::Devpts, "", "/dev/pts"});
    add(MountStep{MountStep::Kind::Tmpfs, "", "/dev/shm"});
  } else {
    add(MountStep{MountStep::Kind::RecursiveBind, "/dev", "/dev"});
  }

  // The configuration's `bind path` entries plus the host's resolv.conf, which --no-mount
  // bind-paths or their destination turn off. With --contain only /etc/hosts and
  // /etc/localtime stay (Apptainer's rule). A source missing on the host is skipped.
  for (const BindSpec& b : r.bind_paths) {
    if (skipped_bind_path(no, b.destination)) continue;
    if (r.contain && b.destination != "/etc/hosts" && b.destination != "/etc/localtime") continue;
    MountStep step = bind(b.source, b.destination, b.read_only);
    step.required = false;
    add(step);
  }
  if (!skipped_bind_path(no, "/etc/resolv.conf"))
    add(r.generated_resolv_conf ? session_file("/etc/resolv.conf") : host_file("/etc/resolv.conf"));
  if (r.generated_hostname) add(session_file("/etc/hostname"));

  if (!r.no_home && !no.home) {
    if (!r.contain || r.custom_home) add(user_bind(r.home_source, r.home_destination));
    else if (!r.workdir.empty()) add(user_bind(r.workdir + "/home", r.home_destination));
    else {
      MountStep home{MountStep::Kind::Tmpfs, "", r.home_destination};
      home.user_requested = true;
      add(home);
    }
  }

  if (no.tmp) {
    // --no-mount tmp: the image's own /tmp and /var/tmp.
  } else if (!r.contain) {
    add(bind("/tmp", "/tmp"));
    add(bind("/var/tmp", "/var/tmp"));
  } else if (!r.workdir.empty()) {
    add(bind(r.workdir + "/tmp", "/tmp"));
    add(bind(r.workdir + "/var_tmp", "/var/tmp"));
  } else {
    add(MountStep{MountStep::Kind::Tmpfs, "", "/tmp"});
    add(MountStep{MountStep::Kind::Tmpfs, "", "/var/tmp"});
  }

  for (const char* file : {"/etc/passwd", "/etc/group"}) add(session_file(file));

  // -S/--scratch, as Apptainer: WORKDIR/scratch/PATH (made by the caller, kept) with
  // --workdir, else a directory of the session's, here a tmpfs of its own.
  for (const std::string& dir : r.scratch) {
    if (!r.workdir.empty()) {
      add(user_bind(r.workdir + "/scratch" + dir, dir));
    } else {
      MountStep step{MountStep::Kind::Tmpfs, "", dir};
      step.user_requested = true;
      add(step);
    }
  }
  for (const std::string& library : r.libraries) {
    MountStep step = bind(library, "/.singularity.d/libs/" + library.substr(library.rfind('/') + 1), true);
    step.directory = false;
    add(step);
  }

  // User binds come after the system ones, as in Apptainer, so that a bind below /tmp,
  // /var/tmp or onto /etc/passwd is not hidden by them; shallower destinations first (a stable sort on
  // depth, then length, Apptainer's order), so that -B /a/b and -B /a work either way.
  std::vector<MountStep> user;
  for (const BindSpec& b : r.binds) user.push_back(user_bind(b.source, b.destination, b.read_only));
  auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
  std::stable_sort(user.begin(), user.end(), [&](const MountStep& a, const MountStep& b) {
    if (depth(a.target) != depth(b.target)) return depth(a.target) < depth(b.target);
    return a.target.size() < b.target.size();
  });
  for (MountStep& step : user) add(std::move(step));

  // The working directory appears at the same path, unless a mount above already shows it.
  bool cwd_visible = r.cwd.empty() || r.cwd == "/";
  for (const MountStep& step : steps)
    if (step.kind != MountStep::Kind::SessionFile && is_under(r.cwd, step.target) && step.directory) cwd_visible = true;
  if (!cwd_visible && !r.contain && !no.cwd) {
    MountStep step = bind(r.cwd, r.cwd);
    step.required = false;
    add(step);
  }
  return steps;
}

std::string describe(const std::vector<MountStep>& steps) {
  std::string out;
  for (const MountStep& s : steps) {
    switch (s.kind) {
      case MountStep::Kind::Bind: out += "bind " + s.source + " -> " + s.target; break;
      case MountStep::Kind::RecursiveBind: out += "rbind " + s.source + " -> " + s.target; break;
      case MountStep::Kind::Tmpfs: out += "tmpfs -> " + s.target; break;
      case MountStep::Kind::SessionFile: out += "generated " + s.source + " -> " + s.target; break;
      case MountStep::Kind::Devpts: out += "devpts -> " + s.target; break;
    }
    if (s.read_only) out += " (ro)";
    if (!s.required) out += " (if present)";
    out += "\n";
  }
  return out;
}

}  // namespace capsa::runtime
