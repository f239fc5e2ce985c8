#pragma once
// Untrusted text (from a registry or the command line) inside a one-line error message.

#include <string>
#include <string_view>

namespace capsa::oci {

// `text` with backslashes, double quotes and control bytes escaped (\n, \xNN) so that a
// message stays on one line, cut after 200 bytes so that a hostile 4 MiB string cannot
// flood a terminal or a Slurm log.
std::string escaped(std::string_view text);
// The same in double quotes.
inline std::string quote(std::string_view text) { return "\"" + escaped(text) + "\""; }

}  // namespace capsa::oci
