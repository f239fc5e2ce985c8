// Fuzzes --env-file parsing and the script that carries the injected variables into the
// container: any text must give valid NAME=VALUE pairs or capsa::Error, and each value
// must come out of injection_script as one `export NAME="..."` line whose double quotes
// it cannot close early (the value is evaluated once inside, as Apptainer does, but can
// never add commands of its own after the assignment).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/environment.hpp"
#include "util/error.hpp"

namespace {

// The text between the quotes as the shell sees its quoting: every `"` escaped, and an
// odd run of backslashes only where one was added before the closing quote.
bool quoted_exactly(std::string_view quoted, std::string_view value) {
  if (quoted.size() < 2 || quoted.front() != '"' || quoted.back() != '"') return false;
  std::string_view inner = quoted.substr(1, quoted.size() - 2);
  std::string read;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    if (inner[i] == '"') return false;  // would close the quotes
    if (inner[i] == '\\' && i + 1 < inner.size() && inner[i + 1] == '"') {
      read += '"';
      ++i;
      continue;
    }
    read += inner[i];
  }
  std::size_t trailing = 0;
  for (auto it = read.rbegin(); it != read.rend() && *it == '\\'; ++it) ++trailing;
  if (trailing % 2 == 1) return false;  // a lone backslash would escape the closing quote
  // The added backslash that evens out a trailing run is the only difference allowed.
  return read == value || read == std::string(value) + "\\";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace runtime = capsa::runtime;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& [name, value] : runtime::parse_env_file(text, "--env-file fuzz")) {
      if (name.empty() || name.find_first_of("=\n '\"$") != std::string::npos) std::abort();
      if (name == "UID" || name == "GID" || name == "LD_LIBRARY_PATH") continue;  // rewritten on purpose
      const std::string script = runtime::injection_script({{name, value}});
      const std::string prefix = "export " + name + "=";
      const std::size_t at = script.find("\n" + prefix);
      if (at == std::string::npos || !script.ends_with("\n")) std::abort();
      const std::size_t start = at + 1 + prefix.size();
      const std::string_view line(script.data() + start, script.size() - start - 1);
      if (line.find('\n') != std::string_view::npos || !quoted_exactly(line, value)) std::abort();
    }
  } catch (const capsa::Error&) {
  }
  return 0;
}
