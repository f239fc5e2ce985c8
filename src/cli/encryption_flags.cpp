#include "cli/encryption_flags.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "registry/credentials.hpp"
#include "util/fd.hpp"

namespace capsa::cli {
namespace {

std::optional<std::string> ask_passphrase() {
  UniqueFd tty(::open("/dev/tty", O_RDWR | O_CLOEXEC));
  if (tty) {
    tty.reset();
    return registry::prompt_for_password_on_tty("Enter encryption passphrase: ");
  }
  // No terminal: the first line of standard input, read a byte at a time so that
  // nothing after it is taken from the command in the container.
  std::string line;
  char c = 0;
  ssize_t n = 0;
  while ((n = ::read(STDIN_FILENO, &c, 1)) == 1 && c != '\n') line.push_back(c);
  if (n < 0 || (n == 0 && line.empty())) return std::nullopt;
  if (line.ends_with('\r')) line.pop_back();
  return line;
}

}  // namespace

void add_encryption_flags(CLI::App& command, encryption::KeyFlags& flags, bool for_build) {
  command.add_flag("--passphrase", flags.passphrase,
                   for_build ? "Encrypt with a passphrase, asked on the terminal (or read from standard input; "
                               "also APPTAINER_ENCRYPTION_PASSPHRASE)"
                             : "The passphrase of an encrypted image, asked on the terminal (or the first line of "
                               "standard input; also APPTAINER_ENCRYPTION_PASSPHRASE)");
  command.add_option("--pem-path", flags.pem_path,
                     for_build ? "Encrypt for this RSA public key (PEM; also APPTAINER_ENCRYPTION_PEM_PATH)"
                               : "The RSA private key (PEM) an encrypted image was made for (also "
                                 "APPTAINER_ENCRYPTION_PEM_PATH)");
}

std::optional<encryption::KeyMaterial> key_from_flags(const encryption::KeyFlags& flags) {
  return encryption::key_from(flags, ask_passphrase);
}

}  // namespace capsa::cli
