#include "runtime/instance_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/become_user.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {
namespace {

using nlohmann::json;

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// The user database's name and home of the caller (uid when it has no entry).
std::pair<std::string, std::string> caller_name_and_home() {
  if (passwd* pw = ::getpwuid(::getuid())) return {pw->pw_name, pw->pw_dir};
  const char* home = std::getenv("HOME");
  return {std::to_string(::getuid()), home ? home : "/tmp"};
}

// mkdir -p with mode 0700 for the parts it makes; an existing part must be a directory.
void make_private_directories(const std::string& path) {
  std::string partial;
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += "/" + part;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) throw_errno("creating " + partial);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(path + " is not a directory");
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A record is a few hundred bytes; anything much larger is not one.
constexpr off_t kRecordLimit = off_t{64} * 1024;

// What a store's directory holds under one name.
struct RecordFile {
  bool owned = false;  // a regular file of the store's owner: a record, or something to remove
  std::string text;    // its text; "" when it is larger than a record can be
};

// `file` in the record directory `dir`, opened without following a symbolic link and
// without blocking (a FIFO opens at once, and is then no regular file), read only when it
// is a regular file of `owner`'s no larger than a record.
RecordFile read_record_file(int dir, const std::string& file, uid_t owner) {
  RecordFile found;
  const UniqueFd fd(::openat(dir, file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner) return found;
  found.owned = true;
  if (st.st_size > kRecordLimit) return found;
  char buffer[4096];
  while (found.text.size() <= static_cast<std::size_t>(kRecordLimit)) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    found.text.append(buffer, static_cast<std::size_t>(n));
  }
  if (found.text.size() > static_cast<std::size_t>(kRecordLimit)) found.text.clear();  // grew meanwhile
  return found;
}

}  // namespace

void check_instance_name(const std::string& name) {
  const bool valid =
      !name.empty() && name.size() <= 128 && name[0] != '.' && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      });
  if (!valid)
    throw Error("instance name \"" + name +
                "\" is not valid: use 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'");
}

std::uint64_t process_start_time(pid_t pid, uid_t* uid) {
  if (pid <= 0) return 0;
  const std::string stat = text_of("/proc/" + std::to_string(pid) + "/stat");
  // The command name (field 2) may hold spaces and parentheses: fields start after the last ')'.
  auto paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  std::uint64_t start = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 3 && field == "Z") return 0;  // a zombie is gone already
    if (index == 22) {
      start = std::stoull(field);
      break;
    }
  }
  if (uid != nullptr) {
    struct stat st {};
    if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0) *uid = st.st_uid;
  }
  return start;
}

std::string current_boot_id() {
  std::string id = text_of("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

bool instance_alive(const InstanceRecord& record) {
  if (record.boot_id != current_boot_id()) return false;
  uid_t owner = 0;
  const std::uint64_t start = process_start_time(record.pid, &owner);
  return start != 0 && start == record.start_time && owner == record.uid;
}

std::string record_to_json(const InstanceRecord& r) {
  nlohmann::ordered_json j = {{"name", r.name},
                              {"pid", r.pid},
                              {"startTime", r.start_time},
                              {"monitorPid", r.monitor},
                              {"monitorStartTime", r.monitor_start_time},
                              {"bootId", r.boot_id},
                              {"uid", r.uid},
                              {"image", r.image},
                              {"ip", r.ip},
                              {"logOutPath", r.log_out},
                              {"logErrPath", r.log_err},
                              {"home", r.home},
                              {"fakeroot", r.fakeroot},
                              {"slurmJobId", r.job_id},
                              {"slurmStepId", r.step_id},
                              {"created", r.created}};
  if (!r.kept_key.empty()) j["keptKey"] = r.kept_key;
  return j.dump(1, '\t') + "\n";
}

InstanceRecord record_from_json(const std::string& text, const std::string& what) {
  try {
    json j = json::parse(text);
    InstanceRecord r;
    r.name = j.at("name").get<std::string>();
    r.pid = j.at("pid").get<pid_t>();
    r.start_time = j.at("startTime").get<std::uint64_t>();
    r.monitor = j.value("monitorPid", -1);
    r.monitor_start_time = j.value("monitorStartTime", std::uint64_t{0});
    r.boot_id = j.at("bootId").get<std::string>();
    r.uid = j.at("uid").get<uid_t>();
    r.image = j.value("image", "");
    r.ip = j.value("ip", "");
    r.log_out = j.value("logOutPath", "");
    r.log_err = j.value("logErrPath", "");
    r.home = j.value("home", "");
    r.fakeroot = j.value("fakeroot", false);
    r.job_id = j.value("slurmJobId", "");
    r.step_id = j.value("slurmStepId", "");
    r.created = j.value("created", "");
    r.kept_key = j.value("keptKey", "");
    return r;
  } catch (const json::exception& e) {
    throw FormatError(what + ": not an instance record (" + e.what() + ")");
  }
}

InstanceStore InstanceStore::default_store(uid_t uid, const std::string& home, const std::string& user, bool create) {
  if (uid == 0) return at("/var/lib/capsa", "instances", user, uid, create);
  return at(home, ".capsa/instances", user, uid, create);
}

InstanceStore InstanceStore::at(const std::string& trusted, const std::string& below, const std::string& user,
                                uid_t uid, bool create) {
  InstanceStore store;
  store.trusted_ = trusted;
  store.app_dir_ = trusted + "/" + below + "/app/" + host_name() + "/" + user;
  store.log_dir_ = trusted + "/" + below + "/logs/" + host_name() + "/" + user;
  store.uid_ = uid;
  if (create) {
    make_private_directories(store.app_dir_);
    make_private_directories(store.log_dir_);
  }
  return store;
}

InstanceStore InstanceStore::for_caller() {
  const auto [user, home] = caller_name_and_home();
  // Root's store is root's alone: a root shell with a user's environment (sudo -E) must
  // not take a user's directory for it and act on the processes its records name.
  if (::getuid() != 0)
    for (const char* variable : {"APPTAINER_CONFIGDIR", "SINGULARITY_CONFIGDIR"})
      if (const char* dir = std::getenv(variable); dir != nullptr && *dir == '/')
        return at(dir, "instances", user, ::getuid(), true);
  return default_store(::getuid(), home, user, true);
}

InstanceStore InstanceStore::for_user(const std::string& user) {
  if (user.empty()) return for_caller();
  if (::getuid() != 0) throw Error("--user " + user + ": only root may act on another user's instances");
  const passwd* pw = ::getpwnam(user.c_str());
  if (pw == nullptr) throw Error("--user " + user + ": no such user");
  const std::string name = pw->pw_name, home = pw->pw_dir;
  const uid_t uid = pw->pw_uid;
  const gid_t gid = pw->pw_gid;
  // The whole process, not setfsuid around each access: the records name processes to
  // signal and /proc files to read as well as files, and setfsuid would leave root's
  // supplementary groups and its power to signal anyone; nothing after this needs root.
  become_user(name, uid, gid);
  return default_store(uid, home, name, false);  // root makes nothing there
}

UniqueFd InstanceStore::open_app_dir() const {
  UniqueFd dir(::open(trusted_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOENT) return {};
    throw_errno("opening " + trusted_);
  }
  std::string path = trusted_;
  std::istringstream parts(app_dir_.substr(trusted_.size()));
  for (std::string part; std::getline(parts, part, '/');) {
    if (part.empty()) continue;
    path += "/" + part;
    // Followed, and then judged by its owner: a user may move ~/.capsa to scratch with a
    // symbolic link, but not point the store at a directory of anyone else's.
    UniqueFd next(::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!next && errno == ENOENT) return {};
    if (!next && errno == ENOTDIR) throw Error(path + " is not a directory: remove it, and capsa makes it again");
    if (!next) throw_errno("opening " + path);
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) throw_errno("opening " + path);
    if (st.st_uid != uid_)
      throw Error(path + " belongs to uid " + std::to_string(st.st_uid) + ", not to the store's uid " +
                  std::to_string(uid_) + ": remove it, and capsa makes it again");
    dir = std::move(next);
  }
  return dir;
}

std::optional<InstanceRecord> InstanceStore::find(const std::string& name) const {
  const UniqueFd dir = open_app_dir();
  if (!dir) return std::nullopt;
  return find_in(dir.get(), name);
}

std::optional<InstanceRecord> InstanceStore::find_in(int dir, const std::string& name) const {
  const std::string file = name + ".json";
  const RecordFile found = read_record_file(dir, file, uid_);
  if (!found.owned) return std::nullopt;  // missing, or no record: not capsa's to remove
  std::optional<InstanceRecord> record;
  try {
    record = record_from_json(found.text, record_path(name));
  } catch (const FormatError&) {
    // Half a record cannot be: save() renames complete files. Whatever this is, it
    // describes no live instance.
  }
  // A record names only an instance of the store's owner: one forged to name another
  // user's process describes nothing this user may act on.
  if (record && record->name == name && record->uid == uid_ && instance_alive(*record)) return record;
  ::unlinkat(dir, file.c_str(), 0);
  return std::nullopt;
}

std::vector<InstanceRecord> InstanceStore::live_records(const std::function<bool(const std::string&)>& wanted) const {
  const UniqueFd dir = open_app_dir();
  if (!dir) return {};
  std::vector<std::string> names;
  // readdir's own descriptor: closedir closes it, `dir` stays for the records.
  if (DIR* listing = ::fdopendir(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0))) {
    while (dirent* entry = ::readdir(listing)) {
      const std::string file = entry->d_name;
      if (file.size() <= 5 || !file.ends_with(".json")) continue;
      std::string name = file.substr(0, file.size() - 5);
      if (wanted(name)) names.push_back(std::move(name));
    }
    ::closedir(listing);
  }
  std::sort(names.begin(), names.end());
  std::vector<InstanceRecord> out;
  for (const std::string& name : names)
    if (auto record = find_in(dir.get(), name)) out.push_back(std::move(*record));
  return out;
}

std::vector<InstanceRecord> InstanceStore::list(const std::string& glob) const {
  // Hidden records (".k-" kept images) are no instances a user started.
  return live_records(
      [&](const std::string& name) { return name[0] != '.' && ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; });
}

std::vector<InstanceRecord> InstanceStore::list_kept() const {
  std::vector<InstanceRecord> kept = live_records([](const std::string& name) { return name.starts_with(".k-"); });
  std::erase_if(kept, [](const InstanceRecord& record) { return record.kept_key.empty(); });
  return kept;
}

void InstanceStore::save(const InstanceRecord& record) const {
  // Renamed into place complete, but not fsync'ed (AtomicFile would): a record describes a
  // process of this boot only, so one lost in a crash is one that would have been pruned
  // anyway, and the fsync was most of a start's time on a busy disk.
  const std::string path = record_path(record.name), temporary = app_dir_ + "/." + record.name + ".json.new";
  {
    UniqueFd file = open_file(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    const std::string text = record_to_json(record);
    write_all(file.get(), {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temporary.c_str());
    errno = err;
    throw_errno("writing " + path);
  }
}

void InstanceStore::remove_if(const std::string& name, pid_t pid) const {
  const UniqueFd dir = open_app_dir();
  if (!dir) return;
  const std::string file = name + ".json";
  const RecordFile found = read_record_file(dir.get(), file, uid_);
  if (!found.owned) return;
  try {
    if (record_from_json(found.text, record_path(name)).pid != pid) return;
  } catch (const FormatError&) {
    return;
  }
  ::unlinkat(dir.get(), file.c_str(), 0);
}

}  // namespace capsa::runtime
