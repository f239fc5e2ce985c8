// `capsa keyserver add|remove|list|login|logout` (and `remote add-keyserver|remove-keyserver`,
// the older names Apptainer keeps): the keyservers of each remote, kept in remote.yaml as
// Apptainer keeps them (keyserver/keyservers.hpp), and the logins to keyservers, kept in
// the user's remote.yaml (mode 0600) under Credentials. A password or token is read from
// a prompt, standard input or -p (overwritten in the process list as capsa starts), and
// never printed.
//
// Apptainer lets only root change keyservers, of the system's remotes. capsa runs without
// root, so a user may also change the keyservers of their own remotes (in their file);
// those of the administrator's remotes stay root's.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "keyserver/keyserver_uri.hpp"
#include "keyserver/keyservers.hpp"
#include "library/remotes.hpp"
#include "registry/base64.hpp"
#include "registry/credentials.hpp"
#include "registry/http.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"
#include "util/tab_columns.hpp"

namespace capsa::cli {
namespace {

using library::RemoteFile;
using library::Remotes;

std::string user_file(const std::string& config) { return config.empty() ? library::user_remote_file() : config; }

Remotes load(const std::string& config) {
  return {library::read_remote_file(user_file(config)), library::read_remote_file(library::system_remote_file())};
}

// NAME URI or URI (the active remote's).
std::pair<std::string, std::string> remote_and_uri(const std::vector<std::string>& args, const Remotes& remotes) {
  std::string name = args.size() > 1 ? args[0] : remotes.active();
  const std::string& uri = args.back();
  if (uri.find_first_not_of(" \t") == std::string::npos) throw Error("invalid URI: a keyserver URI cannot be empty");
  if (name.empty())
    throw Error("no remote is in use: name the remote (keyserver add NAME URI), or add one with `capsa remote add`");
  remotes.get(name);  // one line for an unknown name
  return {name, uri};
}

// Applies `change` to the remote NAME in the file that defines it.
template <typename Change>
void change_remote(const std::string& config, const std::string& name, const Remotes& remotes, Change change) {
  if (remotes.get(name).system) {
    if (::geteuid() != 0)
      throw Error("remote " + name + " is the administrator's: only root changes its keyservers (" +
                  library::system_remote_file() + ")");
    RemoteFile system = library::read_remote_file(library::system_remote_file());
    change(system.remotes.at(name));
    library::write_remote_file(library::system_remote_file(), system, 0644);
    return;
  }
  RemoteFile user = library::read_remote_file(user_file(config));
  change(user.remotes.at(name));
  library::write_remote_file(user_file(config), user, 0600);
}

// -p/--password (hidden from the process list as capsa starts: cli/invocation.cpp), else
// standard input, else a prompt.
std::string read_secret(const ServiceLogin& f) {
  std::string secret;
  if (!f.password.empty()) {
    secret = f.password;
  } else if (f.password_stdin || ::isatty(STDIN_FILENO) == 0) {
    secret = read_to_end(STDIN_FILENO, "reading the password from standard input");
  } else {
    secret = registry::prompt_for_password_on_tty("Password / Token: ");
  }
  if (auto newline = secret.find_first_of("\r\n"); newline != std::string::npos) secret.resize(newline);
  if (secret.empty()) throw Error("a password or token is required: give it at the prompt or on standard input");
  return secret;
}

}  // namespace

void keyserver_login(const std::string& config, const ServiceLogin& f) {
  const std::string& uri = f.uri;
  const std::string url = keyserver::normalize_keyserver_uri(uri);
  const Remotes remotes = load(config);
  const library::KeyserverEntry* entry = nullptr;
  for (const auto& [name, remote] : remotes.all())
    for (const auto& k : remote.keyservers)
      if (entry == nullptr && k.external && keyserver::same_keyserver(k.uri, uri)) entry = &k;
  if (entry == nullptr)
    throw Error("no keyserver " + uri + " was added to a remote: add it with `capsa keyserver add` first");
  std::string secret = read_secret(f);
  const std::string auth =
      f.username.empty() ? "Bearer " + secret : "Basic " + registry::base64_encode(f.username + ":" + secret);
  std::fill(secret.begin(), secret.end(), '\0');
  // As Apptainer: the keyserver's own URL must answer 200 to the credentials.
  registry::ClientOptions options;
  options.insecure_http = url.starts_with("http://");
  options.skip_tls_verify = entry->insecure;
  options.connect_timeout = std::chrono::milliseconds(10'000);
  registry::HttpRequest request;
  request.url = url + "/";
  request.headers.push_back("Authorization: " + auth);
  registry::HttpResponse response;
  try {
    registry::HttpSession session(options, nullptr);
    response = session.perform(request);
  } catch (const registry::TransportError&) {
    throw Error("keyserver " + url + " is unreachable (cannot connect or resolve its name): not logged in");
  }
  if (response.status != 200)
    throw Error("keyserver " + url + " did not accept the credentials (HTTP " + std::to_string(response.status) +
                "): not logged in");
  RemoteFile user = library::read_remote_file(user_file(config));
  std::erase_if(user.credentials, [&](const library::Credential& c) { return keyserver::same_keyserver(c.uri, uri); });
  user.credentials.push_back({uri, auth, entry->insecure});
  library::write_remote_file(user_file(config), user, 0600);
  log::info("Token stored in " + user_file(config));
}

namespace {

void logout(const std::string& config, const std::string& uri) {
  keyserver::normalize_keyserver_uri(uri);
  RemoteFile user = library::read_remote_file(user_file(config));
  const auto removed = std::erase_if(
      user.credentials, [&](const library::Credential& c) { return keyserver::same_keyserver(c.uri, uri); });
  if (removed == 0) throw Error("not logged in to keyserver " + uri + " (nothing to forget)");
  library::write_remote_file(user_file(config), user, 0600);
  log::info("Logout succeeded");
}

void list(const std::string& config, const std::vector<std::string>& args) {
  const Remotes remotes = load(config);
  const std::string active = remotes.active();
  if (!args.empty()) remotes.get(args[0]);
  if (remotes.all().empty()) {
    std::cout << "\nNo remote: key search, pull and push use " << keyserver::kDefaultKeyserver
              << "; verify asks no keyserver (add a remote with `capsa remote add`).\n";
    return;
  }
  for (const auto& [name, remote] : remotes.all()) {
    if (!args.empty() && name != args[0]) continue;
    std::cout << "\n" << name << " " << (remote.system ? "*" : "") << (name == active ? "^" : "") << "\n";
    TabColumns table;
    int order = 1;
    for (const auto& k : keyserver::keyservers_of(remote)) {
      if (k.skip) continue;
      const bool secure = !k.insecure && keyserver::normalize_keyserver_uri(k.uri).starts_with("https://");
      table.add({" ", "#" + std::to_string(order++), k.uri}, secure ? "\U0001F512" : "");
    }
    std::cout << table.str();
  }
  std::cout << "\n(* = system endpoint, ^ = default endpoint)\n";
}

}  // namespace

void keyserver_add(const std::string& config, const std::vector<std::string>& args, unsigned order, bool order_given,
                   bool insecure) {
  if (order_given && order == 0) throw Error("--order must be > 0");
  const Remotes remotes = load(config);
  const auto chosen = remote_and_uri(args, remotes);
  const std::string& name = chosen.first;
  const std::string& uri = chosen.second;
  change_remote(config, name, remotes,
                [&](library::Remote& remote) { keyserver::add_keyserver(remote, uri, order, insecure); });
  log::info("Keyserver " + uri + " added to remote " + name + ".");
}

void keyserver_remove(const std::string& config, const std::vector<std::string>& args) {
  const Remotes remotes = load(config);
  const auto chosen = remote_and_uri(args, remotes);
  const std::string& name = chosen.first;
  const std::string& uri = chosen.second;
  change_remote(config, name, remotes, [&](library::Remote& remote) { keyserver::remove_keyserver(remote, uri); });
  log::info("Keyserver " + uri + " removed from remote " + name + ".");
}

void add_keyserver_command(CLI::App& app) {
  auto config = std::make_shared<std::string>();
  auto* ks =
      app.add_subcommand("keyserver", "Manage the keyservers that OpenPGP keys are searched, pulled and pushed at");
  ks->require_subcommand(1);
  ks->add_option("-c,--config", *config, "The user's remote list (default ~/.apptainer/remote.yaml)");
  ks->footer(
      "Each remote has its keyservers, asked in order (verify asks each until one has the key; search, pull and "
      "push the first). The administrator's remotes are root's to change; a user changes their own. See "
      "docs/signing.md#keyservers.");

  struct AddFlags {
    unsigned order = 0;
    bool insecure = false;
    std::vector<std::string> args;
  };
  auto add = std::make_shared<AddFlags>();
  auto* add_cmd = ks->add_subcommand("add", "Add a keyserver to a remote (the active one by default): add [NAME] URI");
  add_cmd->add_option("args", add->args, "[NAME] URI (http://, https://, hkp:// or hkps://)")
      ->expected(1, 2)
      ->required();
  auto* order = add_cmd->add_option("-o,--order", add->order, "Its place in the remote's list (1: the primary)");
  add_cmd->add_flag("-i,--insecure", add->insecure, "Do not check the keyserver's TLS certificate");
  add_cmd->callback(
      [config, add, order] { keyserver_add(*config, add->args, add->order, order->count() > 0, add->insecure); });

  auto remove_args = std::make_shared<std::vector<std::string>>();
  auto* remove_cmd = ks->add_subcommand("remove", "Remove a keyserver from a remote (the active one by default)");
  remove_cmd->add_option("args", *remove_args, "[NAME] URI")->expected(1, 2)->required();
  remove_cmd->callback([config, remove_args] { keyserver_remove(*config, *remove_args); });

  auto list_args = std::make_shared<std::vector<std::string>>();
  auto* list_cmd = ks->add_subcommand("list", "List the keyservers of each remote (or of remote NAME)");
  list_cmd->add_option("args", *list_args, "NAME")->expected(0, 1);
  list_cmd->callback([config, list_args] { list(*config, *list_args); });

  auto login_flags = std::make_shared<ServiceLogin>();
  auto* login_cmd = ks->add_subcommand(
      "login", "Log in to a keyserver: the token (or, with --username, the password) is read from a prompt or stdin");
  login_cmd->add_option("uri", login_flags->uri, "URI")->required();
  login_cmd->add_option("-u,--username", login_flags->username, "Username (Basic authentication; else a Bearer token)");
  auto* password =
      login_cmd->add_option("-p,--password", login_flags->password,
                            "The password or token; prefer --password-stdin, which keeps it out of the process list");
  login_cmd->add_flag("--password-stdin", login_flags->password_stdin, "Read the password or token from standard input")
      ->excludes(password);
  login_cmd->callback([config, login_flags] { keyserver_login(*config, *login_flags); });

  auto logout_args = std::make_shared<std::vector<std::string>>();
  auto* logout_cmd = ks->add_subcommand("logout", "Forget the credentials of a keyserver: logout URI");
  logout_cmd->add_option("args", *logout_args, "URI")->expected(1)->required();
  logout_cmd->callback([config, logout_args] { logout(*config, logout_args->at(0)); });
}

}  // namespace capsa::cli
