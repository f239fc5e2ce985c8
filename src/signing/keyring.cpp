#include "signing/keyring.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.hpp"
#include "util/install_layout.hpp"

namespace capsa::signing {
namespace {

std::string home_directory() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return pw->pw_dir;
  throw Error("cannot tell the home directory (HOME is not set); set CAPSA_KEYSDIR to the keyring directory");
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string capsa_keys_directory() {
  std::string dir = environment("CAPSA_KEYSDIR");
  return dir.empty() ? home_directory() + "/.capsa/keys" : dir;
}

std::string apptainer_public_keyring() {
  std::string dir = environment("APPTAINER_KEYSDIR");
  if (dir.empty()) dir = environment("SINGULARITY_KEYSDIR");
  if (dir.empty()) dir = home_directory() + "/.apptainer/keys";
  return dir + "/pgp-public";
}

std::vector<std::string> global_public_keyrings() {
  return {"/etc/apptainer/global-pgp-public", "/usr/local/etc/apptainer/global-pgp-public",
          "/etc/singularity/global-pgp-public"};
}

std::vector<std::string> administrator_public_keyrings() {
  std::vector<std::string> files = config_candidates("global-pgp-public");
  for (const auto& global : global_public_keyrings()) files.push_back(global);
  return files;
}

GnupgHome open_user_keyring() { return GnupgHome(capsa_keys_directory()); }

namespace {

void import_files(GnupgHome& trusted, const std::vector<std::string>& files) {
  for (const auto& file : files) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) continue;
    std::ifstream in(file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (!in || bytes.str().empty()) continue;
    try {
      trusted.import(bytes.str());
    } catch (const Error& e) {
      throw Error(file + ": cannot read this public keyring: " + e.what());
    }
  }
}

}  // namespace

GnupgHome public_keys_from(const std::vector<std::string>& files) {
  GnupgHome trusted = GnupgHome::temporary();
  import_files(trusted, files);
  return trusted;
}

GnupgHome trusted_public_keys() {
  GnupgHome trusted = GnupgHome::temporary();
  const std::string mine = capsa_keys_directory();
  if (std::filesystem::exists(mine)) {
    GnupgHome user(mine);
    std::string keys = user.export_public("", false);
    if (!keys.empty()) trusted.import(keys);
  }
  std::vector<std::string> files = {apptainer_public_keyring()};
  for (const auto& global : administrator_public_keyrings()) files.push_back(global);
  import_files(trusted, files);
  return trusted;
}

}  // namespace capsa::signing
