// `capsa remote add|remove|use|list|login|logout|status`: library endpoints and their
// tokens, as `apptainer remote` keeps them (cmd/internal/cli/remote.go): the user's
// ~/.apptainer/remote.yaml (mode 0600: it holds tokens) and the administrator's
// PREFIX/etc/capsa/remote.yaml (library/remotes.hpp). A token is read from --tokenfile,
// a prompt without echo, or standard input: never from the command line, and it is
// never printed.
#include <fcntl.h>
#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "library/client.hpp"
#include "library/remotes.hpp"
#include "registry/credentials.hpp"
#include "registry/options.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

using library::Remote;
using library::RemoteFile;
using library::Remotes;

struct RemoteFlags {
  std::string config;  // -c: another user file
  bool global = false;
  bool no_login = false;
  bool insecure = false;
  bool exclusive = false;
  std::string tokenfile;
  std::vector<std::string> args;
  // remote login's -u, -p, --password-stdin and -i: for docker://, oras:// and keyserver URIs.
  ServiceLogin service;
};

bool root() { return ::geteuid() == 0; }

std::string user_file(const RemoteFlags& f) { return f.config.empty() ? library::user_remote_file() : f.config; }

Remotes load(const RemoteFlags& f) {
  return {library::read_remote_file(user_file(f)), library::read_remote_file(library::system_remote_file())};
}

void save_user(const RemoteFlags& f, const RemoteFile& file) { library::write_remote_file(user_file(f), file, 0600); }

void require_root_for_global(const RemoteFlags& f, const std::string& what) {
  if (f.global && !root())
    throw Error("remote " + what + " --global: only root may change the system-wide remote list (" +
                library::system_remote_file() + ")");
}

void info(const std::string& text) { std::cerr << "INFO:    " << text << "\n"; }

registry::ClientOptions options_for(const std::string& url) {
  registry::ClientOptions options = registry::options_from_environment();
  options.insecure_http = options.insecure_http || url.starts_with("http://");
  return options;
}

// --tokenfile, else a prompt without echo on a terminal, else standard input's first line.
std::string read_token(const RemoteFlags& f, const std::string& name) {
  std::string token;
  if (!f.service.password.empty()) {
    token = f.service.password;  // -p/--password, hidden from the process list (cli/invocation.cpp)
  } else if (!f.tokenfile.empty()) {
    UniqueFd fd(::open(f.tokenfile.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw_errno("reading the token file " + f.tokenfile);
    token = read_to_end(fd.get(), "reading the token file " + f.tokenfile);
  } else if (::isatty(STDIN_FILENO) != 0 && !f.service.password_stdin) {
    token = registry::prompt_for_password_on_tty("Access token for remote " + name + ": ");
  } else {
    token = read_to_end(STDIN_FILENO, "reading the token from standard input");
  }
  if (auto newline = token.find_first_of("\r\n"); newline != std::string::npos) token.resize(newline);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.pop_back();
  if (token.empty())
    throw Error("no token for remote " + name + ": give it on standard input, at the prompt, or with --tokenfile FILE");
  return token;
}

// The remote NAME, or the active one when `args` names none.
std::string chosen(const Remotes& remotes, const std::vector<std::string>& args) {
  if (!args.empty()) {
    remotes.get(args[0]);  // one line for an unknown name
    return args[0];
  }
  std::string active = remotes.active();
  if (active.empty()) throw Error("no remote is in use: name one, or choose one with `capsa remote use NAME`");
  return active;
}

void login(const RemoteFlags& f, const std::string& name) {
  if (!f.service.username.empty() || f.service.insecure)
    throw Error(std::string(!f.service.username.empty() ? "--username" : "--insecure") +
                " applies to docker://, oras:// and keyserver URIs; remote " + name +
                "'s login is an access token (--password, --password-stdin, --tokenfile or the prompt)");
  if (!f.service.password.empty() && (!f.tokenfile.empty() || f.service.password_stdin))
    throw Error("--password, --password-stdin and --tokenfile each give the token: use one");
  Remotes remotes = load(f);
  const Remote& remote = remotes.get(name);
  const std::string url = library::library_url_of(remote);
  const std::string token = read_token(f, name);
  library::check_library_token(url, token, options_for(url));
  info("Access token verified at " + url);
  RemoteFile user = library::read_remote_file(user_file(f));
  Remote& entry = user.remotes[name];
  if (entry.uri.empty()) entry = remote;  // a system remote: the user's file keeps the token
  entry.token = token;
  save_user(f, user);
  info("Token stored in " + user_file(f));
}

void add(const RemoteFlags& f) {
  const std::string& name = f.args.at(0);
  const std::string& uri = f.args.at(1);
  require_root_for_global(f, "add");
  if (name.empty() || name.find_first_of(" \t/:") != std::string::npos)
    throw Error("\"" + name + "\" is no remote name (no blanks, / or :)");
  if (uri.starts_with("http://") && !f.insecure)
    throw Error(uri + " is plain http: add it with --insecure (or APPTAINER_ADD_INSECURE=true)");
  if (load(f).has(name)) throw Error("a remote named " + name + " exists already (see `capsa remote list`)");
  Remote remote;
  remote.uri = uri;
  remote.insecure = uri.starts_with("http://");
  if (f.global) {
    RemoteFile system = library::read_remote_file(library::system_remote_file());
    remote.system = true;
    system.remotes[name] = remote;
    library::write_remote_file(library::system_remote_file(), system, 0644);
  } else {
    RemoteFile user = library::read_remote_file(user_file(f));
    user.remotes[name] = remote;
    save_user(f, user);
  }
  info("Remote \"" + name + "\" added.");
  if (f.global && !f.no_login) info("Global option detected. Will not automatically log into remote.");
  if (!f.global && !f.no_login) login(f, name);
}

void remove(const RemoteFlags& f) {
  const std::string& name = f.args.at(0);
  require_root_for_global(f, "remove");
  const Remotes remotes = load(f);
  const Remote& remote = remotes.get(name);
  if (remote.system && !f.global)
    throw Error("remote " + name + " is the administrator's (system-wide): root removes it with --global");
  if (!remote.system && f.global)
    throw Error("remote " + name + " is no system-wide remote: remove it without --global");
  const std::string path = f.global ? library::system_remote_file() : user_file(f);
  RemoteFile file = library::read_remote_file(path);
  file.remotes.erase(name);
  if (file.active == name) file.active.clear();
  library::write_remote_file(path, file, f.global ? 0644 : 0600);
  info("Remote \"" + name + "\" removed.");
}

void use(RemoteFlags& f) {
  const std::string& name = f.args.at(0);
  if (f.exclusive) f.global = true;  // as Apptainer: --exclusive implies --global
  require_root_for_global(f, "use");
  const Remotes remotes = load(f);
  const Remote& remote = remotes.get(name);
  const std::string exclusive = remotes.exclusive();
  if (!f.global) {
    if (!exclusive.empty() && exclusive != name)
      throw Error("the administrator made remote " + exclusive + " exclusive: it stays in use, " + name + " cannot be");
    RemoteFile user = library::read_remote_file(user_file(f));
    user.active = name;
    save_user(f, user);
  } else {
    if (!remote.system) throw Error("remote " + name + " is no system-wide remote: add it with `remote add --global`");
    RemoteFile system = library::read_remote_file(library::system_remote_file());
    system.active = name;
    for (auto& [other, entry] : system.remotes) entry.exclusive = f.exclusive && other == name;
    library::write_remote_file(library::system_remote_file(), system, 0644);
  }
  info("Remote \"" + name + "\" now in use.");
}

void list(const RemoteFlags& f) {
  const Remotes remotes = load(f);
  const std::string active = remotes.active();
  std::size_t name_width = 4, uri_width = 3;
  for (const auto& [name, remote] : remotes.all()) {
    name_width = std::max(name_width, name.size());
    uri_width = std::max(uri_width, remote.uri.size());
  }
  auto mark = [](bool yes) { return yes ? std::string("\u2713") : std::string(" "); };
  std::cout << "Cloud Services Endpoints\n========================\n\n";
  std::cout << std::left << std::setw(static_cast<int>(name_width + 2)) << "NAME"
            << std::setw(static_cast<int>(uri_width + 2)) << "URI"
            << "DEFAULT?  GLOBAL?  EXCLUSIVE?  SECURE?  LOGGED IN?\n";
  for (const auto& [name, remote] : remotes.all()) {
    std::cout << std::left << std::setw(static_cast<int>(name_width + 2)) << name
              << std::setw(static_cast<int>(uri_width + 2)) << remote.uri << mark(name == active) << "         "
              << mark(remote.system) << "        " << mark(remote.exclusive) << "           "
              << mark(!library::library_url_of(remote).starts_with("http://")) << "        "
              << mark(!remote.token.empty()) << "\n";
  }
  if (remotes.all().empty()) std::cout << "(none: add one with `capsa remote add NAME URI`)\n";
}

void logout(const RemoteFlags& f) {
  const Remotes remotes = load(f);
  const std::string name = chosen(remotes, f.args);
  RemoteFile user = library::read_remote_file(user_file(f));
  if (auto it = user.remotes.find(name); it != user.remotes.end()) {
    it->second.token.clear();
    if (remotes.get(name).system) user.remotes.erase(it);  // only the token was the user's
    save_user(f, user);
  }
  info("Logout succeeded");
}

void status(const RemoteFlags& f) {
  const Remotes remotes = load(f);
  const std::string name = chosen(remotes, f.args);
  const Remote& remote = remotes.get(name);
  const std::string url = library::library_url_of(remote);
  const auto options = options_for(url);
  // The token first: a rejected one is the command's one line, before any table.
  if (!remote.token.empty()) {
    try {
      library::check_library_token(url, remote.token, options);
    } catch (const Error& e) {
      throw Error("remote " + name + ": " + e.what() + " (`capsa remote login " + name + "`)");
    }
  }
  const auto services = library::library_status(url, options);
  std::cout << "Checking status of remote: " << name << "\n\n";
  std::cout << std::left << std::setw(12) << "SERVICE" << std::setw(12) << "STATUS" << std::setw(14) << "VERSION"
            << "URI\n";
  for (const auto& s : services)
    std::cout << std::left << std::setw(12) << s.name << std::setw(12) << s.status << std::setw(14)
              << (s.version.empty() ? "-" : s.version) << s.url << "\n";
  std::cout << "\n"
            << (remote.token.empty() ? "No authentication token: `capsa remote login " + name + "`"
                                     : std::string("Valid authorization token"))
            << "\n";
}

}  // namespace

void add_remote_command(CLI::App& app) {
  auto f = std::make_shared<RemoteFlags>();
  auto* remote = app.add_subcommand("remote", "Manage library endpoints (remotes) and their tokens");
  remote->require_subcommand(1);
  remote->add_option("-c,--config", f->config, "The user's remote list (default ~/.apptainer/remote.yaml)");
  remote->footer(
      "Remotes are kept as Apptainer keeps them: the user's ~/.apptainer/remote.yaml (mode 0600) and the\n"
      "administrator's PREFIX/etc/capsa/remote.yaml. library:// pulls use the active remote and its token.\n"
      "See docs/pull.md#remotes.");

  auto* add_cmd = remote->add_subcommand("add", "Add a remote: add [--global] [--no-login] NAME URI");
  add_cmd->add_option("args", f->args, "NAME URI")->expected(2)->required();
  add_cmd->add_flag("-g,--global", f->global, "Add it to the system-wide list (root only)");
  add_cmd->add_flag("--no-login", f->no_login, "Do not log in (ask for a token) now");
  add_cmd->add_flag("-i,--insecure", f->insecure, "Allow a plain http:// endpoint");
  add_cmd->add_option("--tokenfile", f->tokenfile, "Read the token to log in with from this file");
  add_cmd->callback([f] { add(*f); });

  auto* remove_cmd = remote->add_subcommand("remove", "Remove a remote: remove [--global] NAME");
  remove_cmd->add_option("args", f->args, "NAME")->expected(1)->required();
  remove_cmd->add_flag("-g,--global", f->global, "Remove it from the system-wide list (root only)");
  remove_cmd->callback([f] { remove(*f); });

  auto* use_cmd = remote->add_subcommand("use", "Make a remote the active one: use [--global] [--exclusive] NAME");
  use_cmd->add_option("args", f->args, "NAME")->expected(1)->required();
  use_cmd->add_flag("-g,--global", f->global, "Make it the system-wide default (root only)");
  use_cmd->add_flag("-e,--exclusive", f->exclusive,
                    "Make it the only remote users may use (root only; implies --global)");
  use_cmd->callback([f] { use(*f); });

  auto* list_cmd = remote->add_subcommand("list", "List the remotes; the active one is marked DEFAULT");
  list_cmd->callback([f] { list(*f); });

  auto* login_cmd = remote->add_subcommand(
      "login", "Log in to a remote (the active one by default): the token is read from a prompt or standard input");
  login_cmd->add_option("args", f->args, "NAME, or a docker://, oras:// or keyserver URI")->expected(0, 1);
  login_cmd->add_option("--tokenfile", f->tokenfile, "Read the token from this file");
  login_cmd->add_option("-u,--username", f->service.username, "User name for a docker://, oras:// or keyserver URI");
  login_cmd->add_option("-p,--password", f->service.password,
                        "Password or token; prefer --password-stdin, which keeps it out of the process list");
  login_cmd->add_flag("--password-stdin", f->service.password_stdin, "Read the password or token from standard input");
  login_cmd->add_flag("-i,--insecure", f->service.insecure,
                      "Log in to a docker:// or oras:// registry over plain http");
  login_cmd->callback([f] {
    // As Apptainer: what is not a remote's name is a registry or keyserver to log in to.
    const std::string target = f->args.empty() ? "" : f->args.front();
    Remotes remotes = load(*f);
    if (!target.empty() && !remotes.has(target)) {
      if (target.starts_with("docker://") || target.starts_with("oras://")) {
        if (!f->tokenfile.empty())
          throw Error("--tokenfile is for a remote's token; give the password with -p or stdin");
        ServiceLogin service = f->service;
        service.uri = target;
        registry_login(service);
        // Said once the login worked: a failed one is its own single line.
        log::warning(
            "'remote login' is deprecated for registries and will be removed in a future release; ran 'registry "
            "login'");
        return;
      }
      if (target.find("://") != std::string::npos) {
        if (!f->tokenfile.empty())
          throw Error("--tokenfile is for a remote's token; give the password with -p or stdin");
        ServiceLogin service = f->service;
        service.uri = target;
        keyserver_login(f->config, service);
        // Said once the login worked: a failed one is its own single line.
        log::warning(
            "'remote login' is deprecated for keyservers and will be removed in a future release; ran 'keyserver "
            "login'");
        return;
      }
    }
    login(*f, chosen(remotes, f->args));
  });

  auto* logout_cmd = remote->add_subcommand("logout", "Forget the token of a remote (the active one by default)");
  logout_cmd->add_option("args", f->args, "NAME")->expected(0, 1);
  logout_cmd->callback([f] { logout(*f); });

  auto* status_cmd =
      remote->add_subcommand("status", "Check a remote's services and token (the active one by default)");
  status_cmd->add_option("args", f->args, "NAME")->expected(0, 1);
  status_cmd->callback([f] { status(*f); });

  // The older names Apptainer keeps for `keyserver add|remove`: they say so and run them.
  struct KeyserverFlags {
    unsigned order = 0;
    bool insecure = false;
    std::vector<std::string> args;
  };
  auto ks = std::make_shared<KeyserverFlags>();
  auto* add_ks = remote->add_subcommand("add-keyserver", "Add a keyserver (deprecated: use `keyserver add`)");
  add_ks->add_option("args", ks->args, "[NAME] URI")->expected(1, 2)->required();
  auto* order = add_ks->add_option("-o,--order", ks->order, "Its place in the remote's list (1: the primary)");
  add_ks->add_flag("-i,--insecure", ks->insecure, "Do not check the keyserver's TLS certificate");
  add_ks->callback([f, ks, order] {
    log::warning(
        "'remote add-keyserver' is deprecated and will be removed in a future release; running 'keyserver add'");
    keyserver_add(f->config, ks->args, ks->order, order->count() > 0, ks->insecure);
  });
  auto* remove_ks =
      remote->add_subcommand("remove-keyserver", "Remove a keyserver (deprecated: use `keyserver remove`)");
  remove_ks->add_option("args", ks->args, "[NAME] URI")->expected(1, 2)->required();
  remove_ks->callback([f, ks] {
    log::warning(
        "'remote remove-keyserver' is deprecated and will be removed in a future release; running 'keyserver remove'");
    keyserver_remove(f->config, ks->args);
  });
}

}  // namespace capsa::cli
