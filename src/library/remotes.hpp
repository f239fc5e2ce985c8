#pragma once
// Library endpoints ("remotes") as Apptainer keeps them: remote.yaml files of the form
//   Active: NAME
//   Remotes:
//     NAME: {URI: HOST-or-URL, Token: ..., System: false, Exclusive: false, Insecure: false,
//            Keyservers: [{URI: ..., Skip: false, External: true, Insecure: false}]}
//   Credentials: [{URI: KEYSERVER, Auth: "Bearer ..." or "Basic ...", Insecure: false}]
// The user's file is ~/.apptainer/remote.yaml (APPTAINER_CONFIGDIR, SINGULARITY_CONFIGDIR
// name another folder), written with mode 0600 because it holds tokens; the system-wide
// list an administrator sets is PREFIX/etc/capsa/remote.yaml (found as capsa.conf is),
// which holds no token. A user sees both: the system's remotes (System: true) and their
// own; a token for a system remote is kept in the user's file under the same name. When
// the administrator marks a remote Exclusive, it is everyone's active remote and no user
// choice (remote use, --library, APPTAINER_LIBRARY) overrides it. Keyservers (keyserver/)
// belong to a remote; the credentials of `keyserver login` are the user's alone.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace capsa::library {

// One keyserver of a remote, in the order it is asked. External: added with `keyserver
// add` (else the remote's own default, which is only ever skipped, never removed).
struct KeyserverEntry {
  std::string uri;
  bool skip = false;
  bool external = false;
  bool insecure = false;  // TLS certificate not checked (keyserver add --insecure)
};

// A `keyserver login`: the Authorization header value for one keyserver URI.
struct Credential {
  std::string uri;
  std::string auth;  // "Bearer TOKEN" or "Basic BASE64"
  bool insecure = false;
};

struct Remote {
  std::string uri;    // as given: "library.example.org" or "http://127.0.0.1:8080"
  std::string token;  // "" when not logged in
  bool system = false;
  bool exclusive = false;
  bool insecure = false;  // an http:// endpoint, allowed with --insecure
  std::vector<KeyserverEntry> keyservers;  // empty: the default keyserver only
};

struct RemoteFile {
  std::string active;
  std::map<std::string, Remote> remotes;
  std::vector<Credential> credentials;
};

// Reads a remote.yaml; a missing file is an empty list. Error "PATH: ..." when malformed.
RemoteFile read_remote_file(const std::string& path);
// Writes it atomically with `mode`, or the existing file's mode where that is narrower (a
// rewrite never widens it); the folder is made, 0700, when missing.
void write_remote_file(const std::string& path, const RemoteFile& file, unsigned mode);

std::string user_remote_file();
std::string system_remote_file();  // the existing one, else where it would go

// The remotes a user sees: the system's and the user's own, merged.
class Remotes {
 public:
  Remotes(RemoteFile user, RemoteFile system);
  static Remotes load();  // user_remote_file() and system_remote_file()

  // The remote NAME; Error "no remote named NAME (see `capsa remote list`)" otherwise.
  const Remote& get(const std::string& name) const;
  bool has(const std::string& name) const { return merged_.contains(name); }
  const std::map<std::string, Remote>& all() const { return merged_; }
  // The user's keyserver logins (a system file's are nobody's).
  const std::vector<Credential>& credentials() const { return credentials_; }
  // The active remote's name, "" for none: the exclusive system remote, else the user's
  // choice, else the system's.
  std::string active() const;
  // The exclusive system remote's name, "" for none.
  std::string exclusive() const;

 private:
  std::map<std::string, Remote> merged_;
  std::vector<Credential> credentials_;
  std::string user_active_, system_active_;
};

// The https:// (or http://) base URL of a remote's library API.
std::string library_url_of(const Remote& remote);

}  // namespace capsa::library
