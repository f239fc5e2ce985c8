#include "runtime/kept_image.hpp"

#include "sif/image.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "capsa/version.hpp"
#include "runtime/bind_spec.hpp"
#include "runtime/instance.hpp"
#include "runtime/instance_state.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/fnv1a.hpp"
#include "util/log.hpp"
#include "util/start_phases.hpp"

extern char** environ;

namespace capsa::runtime {
namespace {

constexpr const char* kLingerVariable = "CAPSA_KEEP_IMAGE_SECONDS";

bool is_encrypted_sif(const std::string& path) {
  try {
    const sif::Image image = sif::Image::open(path);
    const sif::Descriptor* primary = image.primary_partition();
    return primary != nullptr && primary->partition().fs_type != sif::FsType::Squashfs;
  } catch (const std::exception&) {
    return false;  // a sandbox, or an image launch reports on
  }
}

bool keepable(const ActionRequest& r) {
  return r.overlays.empty() && !r.writable && !r.writable_tmpfs && !r.contain && r.scratch.empty() && !r.fakeroot &&
         !r.userns && !r.unsquash && r.temporary_directory.empty() && !r.namespaces.any() &&
         r.namespaces.netns_path.empty() && r.networks.empty() && r.dns.empty() && !r.capabilities.any() &&
         r.seccomp_profile.empty() && r.cdi_devices.empty() && !r.nvccli && !r.no_umask && r.app.empty() &&
         !r.cgroups.any() && r.fusemounts.empty() && !r.sharens && r.end_with == 0 &&
         // Under execution control each run mounts the very file that was judged.
         !r.image_checked &&
         // A decrypted image is never left for others to join: each run shows its own key.
         !r.encryption_key && !is_encrypted_sif(r.image);
}

// The environment variables that shape a root: capsa's own switches, PATH (where --nv
// finds the driver's programs), HOME, and the one a launcher's binds come from
// (mpi_launcher.cpp: the PMIx server's directory). Not the variables that differ from
// rank to rank of one job (ranks, visible devices): those only reach the command's
// environment, which every container composes for itself, so the ranks of a job on a
// node share one kept image.
// The Slurm job and step are part of the key too: a kept image ends with the step of its
// first container, and must not take another step's containers with it.
bool shapes_the_root(const std::string& name) {
  if (name == "CAPSA_PHASE_FD" || name == "CAPSA_FUSE_STATS" || name == kLingerVariable) return false;
  return name.starts_with("CAPSA_") || name == "PATH" || name == "HOME" || name == "PMIX_SERVER_TMPDIR" ||
         name == "SLURM_JOB_ID" || name == "SLURM_STEP_ID" || name == "SLURM_STEPID";
}

// The monitor watches through pidfds (kernel 5.3): older kernels mount per container.
bool have_pidfds() {
  const UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  return static_cast<bool>(fd);
}

std::string current_directory() {
  char buffer[PATH_MAX];
  return ::getcwd(buffer, sizeof buffer) ? buffer : "";
}

// Everything that makes one container's root differ from another's, as text: two
// containers with the same key would get the same root from launch().
std::string key_of(const ActionRequest& r, const std::string& image, const struct stat& st) {
  std::string key = std::string("capsa ") + build_info::version + "\nuid " + std::to_string(::getuid()) + "\nimage " +
                    image + " " + std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
                    std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                    std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(st.st_ctim.tv_sec) + "." +
                    std::to_string(st.st_ctim.tv_nsec) + "\ncwd " + current_directory() + "\nbinds " +
                    format_bind_list(r.binds) + "\nhome " + r.home + "\nworkdir " + r.workdir + "\nno-home " +
                    std::to_string(r.no_home) + "\nlibraries";
  for (const auto& library : r.libraries) key += " " + library;
  key += "\nno-mount";
  for (const auto& name : r.no_mount) key += " " + name;
  key += "\nnv " + std::to_string(r.nv) + " rocm " + std::to_string(r.rocm);
  key += "\nsite " + format_bind_list(r.site.bind_paths) + " " + std::to_string(r.site.minimal_dev) + " " +
         r.site.memory_fs_type + " " + std::to_string(r.site.session_size_mib) + " " +
         std::to_string(r.site.kernel_squashfs) + " " + std::to_string(r.site.mount_slave) + " " +
         r.site.enable_overlay + " " + r.site.enable_underlay + "\nunderlay " + std::to_string(r.underlay) +
         " setuid " + std::to_string(r.allow_setuid);
  std::vector<std::string> variables;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (shapes_the_root(text.substr(0, text.find('=')))) variables.push_back(text);
  }
  std::sort(variables.begin(), variables.end());
  for (const auto& variable : variables) key += "\nenv " + variable;
  return key;
}

// The key names a file in the user's own directory, and the full key is checked in the
// record, so a collision only costs sharing: FNV-1a is enough.
std::string name_of(const std::string& key) {
  char text[32];
  std::snprintf(text, sizeof text, ".k-%016llx", static_cast<unsigned long long>(Fnv1a().add(key).value()));
  return text;
}

// flock converts a lock in place (the same open file; another open of the file would
// conflict with this one's).
void relock(int fd, int operation, const std::string& name) {
  while (::flock(fd, operation) != 0)
    if (errno != EINTR) throw_errno("locking the kept image " + name);
}

}  // namespace

int kept_image_linger_ms(const ActionRequest& r) {
  long seconds = static_cast<long>(r.site.keep_image_seconds);
  if (const char* wanted = std::getenv(kLingerVariable); wanted != nullptr && *wanted != '\0') {
    char* end = nullptr;
    const double value = std::strtod(wanted, &end);
    if (end == wanted || *end != '\0' || value < 0)
      throw Error(std::string(kLingerVariable) + "=" + wanted + ": not a number of seconds (0 turns kept images off)");
    // The site's figure is the most a user gets: a node's mounts are the administrator's.
    return static_cast<int>(std::min(value, static_cast<double>(seconds)) * 1000);
  }
  return static_cast<int>(seconds * 1000);
}

void join_or_keep_image(const ActionRequest& r) {
  if (!keepable(r)) return;
  const int linger_ms = kept_image_linger_ms(r);
  if (linger_ms <= 0 || !have_pidfds()) return;
  char resolved[PATH_MAX];
  struct stat st {};
  if (::realpath(r.image.c_str(), resolved) == nullptr || ::stat(resolved, &st) != 0) return;  // launch says why
  const std::string key = key_of(r, resolved, st);
  phases::mark("kept-key");
  const std::string name = name_of(key);
  std::optional<InstanceRecord> record;
  UniqueFd lock;  // held (shared) until the command's exec: the monitor cannot end meanwhile
  try {
    InstanceStore store = InstanceStore::for_caller();
    lock = lock_instance_name(store, name, LOCK_SH);
    phases::mark("kept-locked");
    record = store.find(name);
    if (!record) {
      // The first of several containers starting at once starts the kept image; the
      // others wait for the exclusive lock, then find it.
      relock(lock.get(), LOCK_EX, name);
      record = store.find(name);
      if (!record) {
        ActionRequest holder = r;
        holder.action = "start";
        holder.args.clear();
        const KeptOptions options{key, linger_ms};
        record = spawn_instance(holder, name, store, &options);
      }
      relock(lock.get(), LOCK_SH, name);
    }
    phases::mark("kept-found");
  } catch (const std::exception& e) {
    // Keeping is an optimisation: a container that cannot have it runs as it would without.
    log::debug(std::string("not keeping the image mounted: ") + e.what());
    return;
  }
  if (record->kept_key != key) return;  // another key with the same hash: not shared
  log::debug("joining the kept image " + name + " (PID " + std::to_string(record->pid) + ")");
  try {
    join_container(*record, r, false);
  } catch (const NotJoined& e) {  // it ended meanwhile: mount the image as without it
    log::debug(std::string("not joining the kept image: ") + e.what());
  }
}

int release_kept_images() {
  InstanceStore store = InstanceStore::for_caller();
  const std::vector<InstanceRecord> kept = store.list_kept();
  if (!kept.empty()) stop_records(store, kept, SIGTERM, std::chrono::seconds(5), false);
  return static_cast<int>(kept.size());
}

}  // namespace capsa::runtime
