#pragma once
// Where the key of an encrypted image comes from, in Apptainer's order of precedence
// (cmd/internal/cli/build_linux.go, getEncryptionMaterial): --pem-path, --passphrase,
// APPTAINER_ENCRYPTION_PEM_PATH, APPTAINER_ENCRYPTION_PEM_DATA,
// APPTAINER_ENCRYPTION_PASSPHRASE (SINGULARITY_ as well). The material itself never goes
// to argv, a log or an error message.
#include <functional>
#include <optional>
#include <string>

namespace capsa::encryption {

struct KeyMaterial {
  enum class Kind { Passphrase, PemFile, PemData };
  Kind kind = Kind::Passphrase;
  std::string passphrase;  // Passphrase
  std::string pem_path;    // PemFile: the public key (build) or the private key (run)
  std::string pem_data;    // PemData: the PEM text itself

  // For messages: "--passphrase", "--pem-path FILE", "APPTAINER_ENCRYPTION_PEM_DATA".
  std::string origin;
};

struct KeyFlags {
  bool passphrase = false;  // --passphrase: ask on the terminal (or read a line of stdin)
  std::string pem_path;     // --pem-path
};

// nullopt when neither a flag nor a variable names a key. `ask` asks for the passphrase
// (--passphrase); it returns nullopt when it cannot. Throws Error for an empty
// passphrase or a PEM file that does not exist.
std::optional<KeyMaterial> key_from(const KeyFlags& flags, const std::function<std::optional<std::string>()>& ask);

// Whether the environment names a key (for the build's warning without --encrypt).
bool environment_names_a_key();

}  // namespace capsa::encryption
