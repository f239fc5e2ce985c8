#include "library/remotes.hpp"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/atomic_file.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/install_layout.hpp"

namespace capsa::library {
namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

bool flag(const YAML::Node& node, const char* key) { return node[key] && node[key].as<bool>(); }

}  // namespace

RemoteFile read_remote_file(const std::string& path) {
  RemoteFile file;
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return file;
    throw_errno("reading " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    const YAML::Node root = YAML::Load(text.str());
    if (!root || root.IsNull()) return file;
    if (!root.IsMap()) throw Error("expected Active: and Remotes:");
    if (root["Active"]) file.active = root["Active"].as<std::string>();
    if (const YAML::Node remotes = root["Remotes"]; remotes && !remotes.IsNull()) {
      if (!remotes.IsMap()) throw Error("Remotes: must map names to endpoints");
      for (const auto& entry : remotes) {
        const YAML::Node r = entry.second;
        Remote remote;
        if (r["URI"]) remote.uri = r["URI"].as<std::string>();
        if (r["Token"]) remote.token = r["Token"].as<std::string>();
        remote.system = flag(r, "System");
        remote.exclusive = flag(r, "Exclusive");
        remote.insecure = flag(r, "Insecure");
        if (const YAML::Node list = r["Keyservers"]; list && list.IsSequence()) {
          for (const auto& k : list) {
            if (!k["URI"]) throw Error("a keyserver of remote " + entry.first.as<std::string>() + " has no URI");
            remote.keyservers.push_back(
                {k["URI"].as<std::string>(), flag(k, "Skip"), flag(k, "External"), flag(k, "Insecure")});
          }
        }
        file.remotes[entry.first.as<std::string>()] = remote;
      }
    }
    if (const YAML::Node list = root["Credentials"]; list && list.IsSequence()) {
      for (const auto& c : list) {
        if (!c["URI"]) throw Error("a credential has no URI");
        file.credentials.push_back(
            {c["URI"].as<std::string>(), c["Auth"] ? c["Auth"].as<std::string>() : "", flag(c, "Insecure")});
      }
    }
  } catch (const YAML::Exception& e) {
    throw FormatError(path + ": not a remote list Apptainer or capsa wrote: " + e.what());
  } catch (const Error& e) {
    throw FormatError(path + ": not a remote list Apptainer or capsa wrote: " + e.what());
  }
  return file;
}

void write_remote_file(const std::string& path, const RemoteFile& file, unsigned mode) {
  const std::string parent = std::filesystem::path(path).parent_path();
  if (!parent.empty() && ::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) throw Error("creating " + parent + ": " + ec.message());
  }
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "Active" << YAML::Value << file.active;
  out << YAML::Key << "Remotes" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, remote] : file.remotes) {
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "URI" << YAML::Value << remote.uri;
    if (!remote.token.empty()) out << YAML::Key << "Token" << YAML::Value << remote.token;
    out << YAML::Key << "System" << YAML::Value << remote.system;
    out << YAML::Key << "Exclusive" << YAML::Value << remote.exclusive;
    if (remote.insecure) out << YAML::Key << "Insecure" << YAML::Value << true;
    if (!remote.keyservers.empty()) {
      out << YAML::Key << "Keyservers" << YAML::Value << YAML::BeginSeq;
      for (const auto& k : remote.keyservers)
        out << YAML::BeginMap << YAML::Key << "URI" << YAML::Value << k.uri << YAML::Key << "Skip" << YAML::Value
            << k.skip << YAML::Key << "External" << YAML::Value << k.external << YAML::Key << "Insecure" << YAML::Value
            << k.insecure << YAML::EndMap;
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!file.credentials.empty()) {
    out << YAML::Key << "Credentials" << YAML::Value << YAML::BeginSeq;
    for (const auto& c : file.credentials) {
      out << YAML::BeginMap << YAML::Key << "URI" << YAML::Value << c.uri;
      if (!c.auth.empty()) out << YAML::Key << "Auth" << YAML::Value << c.auth;
      out << YAML::Key << "Insecure" << YAML::Value << c.insecure << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  const std::string text = std::string(out.c_str()) + "\n";
  // A rewrite never widens the file: an existing one keeps its mode where that is
  // narrower than `mode` (an administrator's 0640 list stays 0640), a new one gets `mode`.
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0 && S_ISREG(existing.st_mode)) mode &= existing.st_mode & 0777;
  AtomicFile atomic(path, mode);
  write_all(atomic.fd(), {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  atomic.commit();
}

std::string user_remote_file() {
  for (const char* name : {"APPTAINER_CONFIGDIR", "SINGULARITY_CONFIGDIR"})
    if (std::string dir = environment(name); !dir.empty()) return dir + "/remote.yaml";
  const std::string home = environment("HOME");
  if (home.empty()) throw Error("HOME is not set: cannot find ~/.apptainer/remote.yaml");
  return home + "/.apptainer/remote.yaml";
}

std::string system_remote_file() {
  const std::vector<std::string> candidates = config_candidates("remote.yaml");
  for (const std::string& path : candidates) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return path;
  }
  return candidates.front();
}

Remotes::Remotes(RemoteFile user, RemoteFile system)
    : credentials_(std::move(user.credentials)),
      user_active_(std::move(user.active)),
      system_active_(std::move(system.active)) {
  for (auto& [name, remote] : system.remotes) {
    remote.system = true;
    remote.token.clear();  // a token in the world-readable file is nobody's
    merged_[name] = remote;
  }
  for (auto& [name, remote] : user.remotes) {
    if (auto it = merged_.find(name); it != merged_.end()) {
      it->second.token = remote.token;  // the user's login to a system remote; its keyservers are the system's
      continue;
    }
    remote.system = false;
    remote.exclusive = false;
    merged_[name] = remote;
  }
}

Remotes Remotes::load() {
  // Without HOME there is no user list, but the administrator's still counts.
  const bool has_user_file = !environment("HOME").empty() || !environment("APPTAINER_CONFIGDIR").empty() ||
                             !environment("SINGULARITY_CONFIGDIR").empty();
  return Remotes(has_user_file ? read_remote_file(user_remote_file()) : RemoteFile{},
                 read_remote_file(system_remote_file()));
}

const Remote& Remotes::get(const std::string& name) const {
  auto it = merged_.find(name);
  if (it == merged_.end()) throw Error("no remote named " + name + " (see `capsa remote list`)");
  return it->second;
}

std::string Remotes::exclusive() const {
  for (const auto& [name, remote] : merged_)
    if (remote.system && remote.exclusive) return name;
  return "";
}

std::string Remotes::active() const {
  if (std::string name = exclusive(); !name.empty()) return name;
  if (!user_active_.empty() && merged_.contains(user_active_)) return user_active_;
  if (!system_active_.empty() && merged_.contains(system_active_)) return system_active_;
  return "";
}

std::string library_url_of(const Remote& remote) {
  std::string url = remote.uri;
  if (!url.starts_with("http://") && !url.starts_with("https://")) url = "https://" + url;
  while (url.size() > 8 && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace capsa::library
