// `capsa registry login|logout|list`: credentials for docker:// and oras:// registries,
// as `apptainer registry` keeps them (cmd/internal/cli/registry.go,
// internal/pkg/remote/credential, internal/pkg/util/ociauth): checked against the registry,
// then stored in ~/.apptainer/docker-config.json (registry/credential_store.hpp).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/env_flags.hpp"
#include "cli/refused_flags.hpp"
#include "registry/client.hpp"
#include "registry/credential_store.hpp"
#include "registry/credentials.hpp"
#include "registry/options.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

// docker://HOST[:PORT][/PATH] or oras://…: the part after the scheme, which is the key
// the credentials are stored under, as Apptainer's login handler takes u.Host + u.Path.
std::string registry_of(const std::string& uri) {
  for (std::string_view scheme : {"docker://", "oras://"}) {
    if (!uri.starts_with(scheme)) continue;
    std::string rest = uri.substr(scheme.size());
    while (!rest.empty() && rest.back() == '/') rest.pop_back();
    if (rest.empty() || rest.front() == '/' || rest.find_first_of(" \t@?#") != std::string::npos) break;
    return rest;
  }
  throw Error("\"" + uri +
              "\" is not a registry: give docker://HOST[:PORT] or oras://HOST[:PORT] (e.g. oras://ghcr.io)");
}

// The host the registry API answers on (Docker Hub's is registry-1.docker.io).
std::string api_host_of(const std::string& registry) {
  const std::string host = registry.substr(0, registry.find('/'));
  return registry::normalise_config_key(host) == "index.docker.io" ? "registry-1.docker.io" : host;
}

std::string password_from_stdin() {
  std::string password = read_to_end(STDIN_FILENO, "reading the password from standard input");
  if (password.ends_with('\n')) password.pop_back();
  if (password.ends_with('\r')) password.pop_back();
  if (password.empty()) throw Error("--password-stdin: standard input held no password");
  return password;
}

std::string config_path(const std::string& authfile) {
  return authfile.empty() ? registry::login_config_path() : authfile;
}

}  // namespace

void registry_login(const ServiceLogin& f) {
  const std::string registry = registry_of(f.uri);
  const std::string username = !f.username.empty() ? f.username : env_value("LOGIN_USERNAME").value_or("");
  if (username.empty()) throw Error("registry login to " + registry + " needs a username (--username)");
  if (f.password_stdin && !f.password.empty()) throw Error("--password and --password-stdin go alone; give one");
  std::string password = f.password_stdin      ? password_from_stdin()
                         : !f.password.empty() ? f.password
                                               : env_value("LOGIN_PASSWORD").value_or("");
  if (password.empty()) password = registry::prompt_for_password_on_tty("Password / Token: ");

  registry::ClientOptions options = registry::options_from_environment();
  options.insecure_http = options.insecure_http || f.insecure;
  registry::RegistryClient client(api_host_of(registry), options,
                                  registry::Credentials{username, password, "", "registry login"});
  try {
    client.check_login();
  } catch (const registry::RegistryError& e) {
    if (e.kind() != registry::ErrorKind::kUnauthorized) throw;
    throw Error("registry login to " + registry + " failed: 401 Unauthorized, the registry refused username \"" +
                username + "\" with that password or token");
  }
  const std::string path = config_path(f.authfile);
  registry::store_login(path, registry, username, password);
  log::info("Token stored in " + path);
}

namespace {

void logout(const std::string& uri, const std::string& authfile) {
  const std::string registry = registry_of(uri);
  if (!registry::remove_login(config_path(authfile), registry))
    log::warning("There is no existing login to registry \"" + registry + "\".");
  log::info("Logout succeeded");
}

void list() {
  std::cout << "\nURI" << std::string(30, ' ') << "SECURE?\n";
  for (const std::string& key : registry::stored_logins(registry::login_config_path())) {
    std::string padded = key;
    padded.resize(std::max<std::size_t>(key.size() + 2, 33), ' ');
    std::cout << padded << "✓\n";
  }
}

}  // namespace

void add_registry_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("registry", "Log in to and out of docker:// and oras:// registries");
  cmd->require_subcommand(1);
  add_refused_flags(*cmd, {{"-c,--config", true,
                            "Apptainer's --config is the remote.yaml that lists registry logins; capsa keeps them "
                            "in docker-config.json only: choose that file with login/logout --authfile"}});
  cmd->footer(
      "Logins are checked against the registry, then stored in ~/.apptainer/docker-config.json\n"
      "($APPTAINER_CONFIGDIR) or --authfile, mode 0600; pull, exec, build and push read them\n"
      "together with ~/.docker/config.json.");

  auto flags = std::make_shared<ServiceLogin>();
  auto* in = cmd->add_subcommand("login", "Check credentials with a registry and store them");
  in->add_option("registry", flags->uri, "docker://HOST[:PORT] or oras://HOST[:PORT]")->required();
  in->add_option("-u,--username", flags->username, "User name (APPTAINER_LOGIN_USERNAME)");
  in->add_option("-p,--password", flags->password,
                 "Password or token; prefer --password-stdin, which keeps it out of the process list "
                 "(APPTAINER_LOGIN_PASSWORD)");
  in->add_flag("--password-stdin", flags->password_stdin, "Read the password or token from standard input");
  in->add_option("--authfile", flags->authfile, "Store the credentials in this file instead");
  in->callback([flags] { registry_login(*flags); });

  auto out_authfile = std::make_shared<std::string>();
  auto out_registry = std::make_shared<std::string>();
  auto* out = cmd->add_subcommand("logout", "Remove the stored credentials of a registry");
  out->add_option("registry", *out_registry, "docker://HOST[:PORT] or oras://HOST[:PORT]")->required();
  out->add_option("--authfile", *out_authfile, "Remove them from this file instead");
  out->callback([out_registry, out_authfile] { logout(*out_registry, *out_authfile); });

  auto* ls = cmd->add_subcommand("list", "List the registries with stored credentials");
  ls->callback([] { list(); });
}

}  // namespace capsa::cli
