// Fuzzes the strict reader of environment files (runtime/env_script.hpp), which reads
// image content in capsa's own process: any text must either be understood or refused
// with NeedsShell (never a crash, hang or other exception), and what it exports must be
// variables a shell could hold.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/env_script.hpp"
#include "runtime/shell_words.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace runtime = capsa::runtime;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // File tests look below a root that does not exist: nothing of the host is consulted.
  runtime::EnvScript shell("/nonexistent-capsa-fuzz-root");
  shell.set_exported("PATH", "/usr/bin:/bin");
  shell.set_exported("HOME", "/home/user");
  shell.set_exported("EMPTY", "");
  try {
    shell.run(text, "fuzz.sh");
  } catch (const runtime::NeedsShell& needs) {
    if (needs.what.empty()) std::abort();
    return 0;
  }
  for (const auto& [name, value] : shell.exported())
    if (!runtime::is_shell_variable_name(name)) std::abort();
  return 0;
}
