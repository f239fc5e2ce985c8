// Fuzzes the reader of environment files (runtime/env_script.hpp), which reads image
// content in capsa's own process: strictly, any text must either be understood or
// refused with NeedsShell; leniently, it is always read (what is not understood left
// out); never a crash, hang or other exception, and only names a shell could hold are
// exported.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/env_script.hpp"
#include "runtime/shell_words.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace runtime = capsa::runtime;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (auto mode : {runtime::EnvScript::Mode::Strict, runtime::EnvScript::Mode::Lenient}) {
    // File tests look below a root that does not exist: nothing of the host is consulted.
    runtime::EnvScript shell("/nonexistent-capsa-fuzz-root", mode);
    shell.set_exported("PATH", "/usr/bin:/bin");
    shell.set_exported("HOME", "/home/user");
    shell.set_exported("EMPTY", "");
    try {
      shell.run(text, "fuzz.sh");
    } catch (const runtime::NeedsShell& needs) {
      // A lenient reading never gives up on a file.
      if (needs.what.empty() || mode == runtime::EnvScript::Mode::Lenient) std::abort();
      continue;
    }
    for (const auto& [name, value] : shell.exported())
      if (!runtime::is_shell_variable_name(name)) std::abort();
  }
  return 0;
}
