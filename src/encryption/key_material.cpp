#include "encryption/key_material.hpp"

#include <sys/stat.h>

#include <cstdlib>

#include "util/error.hpp"

namespace capsa::encryption {
namespace {

std::optional<std::string> variable(const char* suffix) {
  for (const char* prefix : {"APPTAINER_", "SINGULARITY_"}) {
    const std::string name = std::string(prefix) + suffix;
    if (const char* value = std::getenv(name.c_str())) return std::string(value);
  }
  return std::nullopt;
}

KeyMaterial pem_file(const std::string& path, const std::string& origin) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(origin + ": " + path + " does not exist or is not a file (give the PEM file of an RSA key)");
  KeyMaterial key;
  key.kind = KeyMaterial::Kind::PemFile;
  key.pem_path = path;
  key.origin = origin;
  return key;
}

KeyMaterial passphrase(std::string text, const std::string& origin) {
  if (text.empty()) throw Error(origin + ": the passphrase is empty (an image cannot be encrypted with none)");
  KeyMaterial key;
  key.kind = KeyMaterial::Kind::Passphrase;
  key.passphrase = std::move(text);
  key.origin = origin;
  return key;
}

}  // namespace

std::optional<KeyMaterial> key_from(const KeyFlags& flags, const std::function<std::optional<std::string>()>& ask) {
  if (!flags.pem_path.empty()) return pem_file(flags.pem_path, "--pem-path");
  if (flags.passphrase) {
    std::optional<std::string> typed = ask();
    if (!typed) throw Error("--passphrase: no terminal to ask on and nothing on standard input");
    return passphrase(std::move(*typed), "--passphrase");
  }
  if (auto path = variable("ENCRYPTION_PEM_PATH")) return pem_file(*path, "APPTAINER_ENCRYPTION_PEM_PATH");
  if (auto data = variable("ENCRYPTION_PEM_DATA")) {
    KeyMaterial key;
    key.kind = KeyMaterial::Kind::PemData;
    key.pem_data = std::move(*data);
    key.origin = "APPTAINER_ENCRYPTION_PEM_DATA";
    return key;
  }
  if (auto text = variable("ENCRYPTION_PASSPHRASE"))
    return passphrase(std::move(*text), "APPTAINER_ENCRYPTION_PASSPHRASE");
  return std::nullopt;
}

bool environment_names_a_key() {
  return variable("ENCRYPTION_PEM_PATH") || variable("ENCRYPTION_PEM_DATA") || variable("ENCRYPTION_PASSPHRASE");
}

}  // namespace capsa::encryption
