#pragma once
// Where sign and key take a pass-phrase from: standard input with --password-stdin (for
// scripts and tests), else a prompt on the terminal, asked only when GnuPG needs one.
// Never a command-line argument, which every user of the machine can read.
#include <optional>
#include <string>

#include "signing/gnupg_home.hpp"

namespace capsa::cli {

// Reads standard input once (trailing newline dropped); empty input is an empty pass-phrase.
std::string passphrase_from_stdin();

// `from_stdin`: the text read from standard input; otherwise a prompt on /dev/tty with
// `prompt` (nullopt when there is no terminal).
signing::PassphraseSource passphrase_source(const std::optional<std::string>& from_stdin, const std::string& prompt);

}  // namespace capsa::cli
