#include "cli/passphrase.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "registry/credentials.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::cli {

std::string passphrase_from_stdin() {
  std::string text = read_to_end(STDIN_FILENO, "reading the pass-phrase from standard input");
  if (text.ends_with('\n')) text.pop_back();
  if (text.ends_with('\r')) text.pop_back();
  return text;
}

signing::PassphraseSource passphrase_source(const std::optional<std::string>& from_stdin, const std::string& prompt) {
  if (from_stdin) return [text = *from_stdin]() -> std::optional<std::string> { return text; };
  return [prompt]() -> std::optional<std::string> {
    const int tty = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (tty < 0) return std::nullopt;
    ::close(tty);
    return registry::prompt_for_password_on_tty(prompt);
  };
}

}  // namespace capsa::cli
