#pragma once
// A strict reader of the shell that environment files (/.singularity.d/env/*.sh) are
// written in, to compose a container's environment without starting /bin/sh.
//
// Apptainer never runs the image's shell for this: it interprets the action script
// in-process. capsa does the same for the files it fully understands, and refuses
// everything else with NeedsShell, so that the caller runs the real /bin/sh instead:
// nothing is ever guessed. Understood: assignments, `export`, `unset`, `if/elif/else/fi`
// over `[ ... ]`/`test` (-n -z -d -f -e -x -r -s -L, =, !=, !), `true`, `false`, `:`,
// `&&`, `||`, `;`, comments and line continuations (words: shell_words.hpp). Commands and
// constructs in a branch that is not taken are only parsed (the SCIF parts of 95-apps.sh).
#include <map>
#include <string>

#include "runtime/environment.hpp"

namespace capsa::runtime {

// Thrown where a real shell is needed; `what` says why (shown with --debug).
struct NeedsShell {
  std::string what;
};

class EnvScript {
 public:
  enum class Mode {
    Strict,   // anything not understood throws NeedsShell: the caller runs a real shell
    Lenient,  // for images without a shell: a statement not understood is skipped whole
              // (an `if` whose condition is not understood with all its branches)
  };

  // File tests (`[ -d PATH ]`) look below `root`: "/" once inside the container.
  explicit EnvScript(std::string root = "/", Mode mode = Mode::Strict) : root_(std::move(root)), mode_(mode) {}

  // Runs `text` (named `origin` in NeedsShell messages). Throws NeedsShell (Strict only).
  void run(const std::string& text, const std::string& origin);

  // The variable's value, nullptr when unset. Reading a variable the shell itself would
  // have set (PPID, IFS, SHLVL...) while it is unset here throws NeedsShell (Strict;
  // Lenient reads it as unset).
  const std::string* value(const std::string& name) const;
  void assign(const std::string& name, const std::string& value);  // keeps its export flag
  void set_exported(const std::string& name, const std::string& value);
  void mark_exported(const std::string& name);
  void unset(const std::string& name);
  bool is_set(const std::string& name) const;

  // What a command started now would get: the exported variables that are set.
  EnvMap exported() const;

 private:
  struct Variable {
    std::string value;
    bool set = false;
    bool exported = false;
  };
  class Parser;

  std::string root_;
  Mode mode_;
  std::map<std::string, Variable> variables_;
};

}  // namespace capsa::runtime
