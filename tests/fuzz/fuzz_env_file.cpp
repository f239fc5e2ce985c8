// Fuzzes --env-file parsing and the script that carries the injected variables into the
// container: any text must give valid NAME=VALUE pairs or capsa::Error, and each value
// must come out of injection_script single-quoted, so that `sh` never evaluates it.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/environment.hpp"
#include "util/error.hpp"

namespace {

// The value as sh reads the quoted text: '...' runs with '\'' between them.
bool quoted_exactly(std::string_view script_line, std::string_view value) {
  std::string read;
  std::size_t i = 0;
  while (i < script_line.size()) {
    if (script_line[i] == '\'') {
      std::size_t end = script_line.find('\'', i + 1);
      if (end == std::string_view::npos) return false;
      read.append(script_line.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (script_line.substr(i, 2) == "\\'") {
      read += '\'';
      i += 2;
    } else {
      return false;  // anything unquoted could be expanded by the shell
    }
  }
  return read == value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace runtime = capsa::runtime;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& [name, value] : runtime::parse_env_file(text, "--env-file fuzz")) {
      if (name.empty() || name.find_first_of("=\n '\"$") != std::string::npos) std::abort();
      const std::string script = runtime::injection_script({{name, value}});
      const std::string prefix = "export " + name + "=";
      if (!script.starts_with(prefix) || !script.ends_with("\n")) std::abort();
      if (!quoted_exactly(std::string_view(script).substr(prefix.size(), script.size() - prefix.size() - 1), value))
        std::abort();
    }
  } catch (const capsa::Error&) {
  }
  return 0;
}
