#include "runtime/action_in_process.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "runtime/env_script.hpp"
#include "runtime/gpu/nvidia.hpp"
#include "runtime/shell_words.hpp"
#include "util/error.hpp"
#include "util/find_executable.hpp"

namespace capsa::runtime {
namespace {

// Variables whose value or behaviour depends on which shell /bin/sh is.
bool shell_dependent(const std::string& name) {
  static const char* names[] = {"EUID", "PPID", "SHELLOPTS", "BASHOPTS", "BASH_VERSINFO", "UID", "OPTIND", "IFS", "ENV"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

bool stat_is(const std::string& path, mode_t type) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IFMT) == type;
}

// What the shell's PWD would be: the inherited one when it names the working directory.
std::string working_directory(const EnvMap& process) {
  auto it = process.find("PWD");
  struct stat named {}, here {};
  if (it != process.end() && !it->second.empty() && it->second[0] == '/' && ::stat(it->second.c_str(), &named) == 0 &&
      ::stat(".", &here) == 0 && named.st_dev == here.st_dev && named.st_ino == here.st_ino)
    return it->second;
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) throw NeedsShell{"the working directory has no name"};
  return buf;
}

std::string value_or_empty(const EnvScript& sh, const std::string& name) {
  const std::string* v = sh.value(name);
  return v ? *v : std::string();
}

// `list` with `entry` appended unless it is one of its colon-separated entries already.
std::string with_entry(const std::string& list, const std::string& entry) {
  if ((":" + list + ":").find(":" + entry + ":") != std::string::npos) return list;
  return list.empty() ? entry : list + ":" + entry;
}

// The action script's steps (action_script.hpp), in its order, on the reader's state.
// Strict: whatever needs a real shell throws NeedsShell. Lenient (an image without one):
// what the reader cannot do is left out, as no shell could do it either.
class Composer {
 public:
  Composer(const ActionScriptInput& in, EnvScript::Mode mode, const image::ImageFiles& files, const std::string& root)
      : in_(in), lenient_(mode == EnvScript::Mode::Lenient), sh_(root, mode), files_(files) {}

  EnvMap compose() {
    set_aside_host_values();
    source_environment();
    if (in_.gpu_libraries) gpu_library_path();
    library_path_around();
    restore_host_values();
    prompt();
    return sh_.exported();
  }

 private:
  void needs_shell(const std::string& why) const {
    if (!lenient_) throw NeedsShell{why};
  }

  void set_aside_host_values() {
    for (const auto& [name, value] : *in_.process) {
      if (!is_shell_variable_name(name)) needs_shell("the environment holds " + name + ", not a shell name");
      if (shell_dependent(name)) needs_shell("the environment holds " + name + ", which the shell sets");
      // A name no shell can hold passes through untouched (Lenient).
      if (kept_through_scripts(name) || !is_shell_variable_name(name)) sh_.set_exported(name, value);
      else held_.emplace_back(name, value);
    }
    sh_.set_exported("PWD", working_directory(*in_.process));
  }

  // The text of an environment file, nullopt when it is no regular file; one that cannot
  // be read needs a shell (Strict) or is left out (Lenient).
  std::optional<std::string> read(const std::string& path) const {
    try {
      return files_.read_file(path);
    } catch (const Error& e) {
      if (!lenient_) throw NeedsShell{e.what()};
      return std::nullopt;
    }
  }

  // The names in `dir`, nullopt when it is no directory; as read() when it cannot be listed.
  std::optional<std::vector<std::string>> list(const std::string& dir) const {
    try {
      return files_.list_directory(dir);
    } catch (const Error& e) {
      if (!lenient_) throw NeedsShell{e.what()};
      return std::nullopt;
    }
  }

  void source_environment() {
    const std::string dir = "/.singularity.d/env";
    if (std::optional<std::vector<std::string>> names = list(dir)) {
      // The shell's glob: no dot files, byte order.
      std::vector<std::string> scripts;
      for (const std::string& name : *names)
        if (name[0] != '.' && name.size() > 3 && name.compare(name.size() - 3, 3, ".sh") == 0) scripts.push_back(name);
      std::sort(scripts.begin(), scripts.end());
      for (const std::string& name : scripts) {
        std::string path = dir + "/" + name;
        std::optional<std::string> script = read(path);
        if (!script) continue;  // `[ -f ]`: regular files only
        if (name == "10-docker2singularity.sh" || name == "10-docker.sh") {
          sh_.run(*script, path);
          fix_path();
        } else if (name == "90-environment.sh") {
          if (!sh_.is_set("PATH")) fix_path();
          sh_.run(*script, path);
        } else if (name == "99-base.sh") {
          sh_.run(*script, path);
          inject();
        } else if (name == "99-runtimevars.sh") {
          if (injected_) runtime_variables();
        } else {
          sh_.run(*script, path);
        }
      }
    } else if (std::optional<std::string> environment = read("/environment")) {
      sh_.run(*environment, "/environment");
      fix_path();
    }
    if (!injected_) inject();
    if (!runtime_variables_done_) runtime_variables();
  }

  void fix_path() {
    for (const char* dir : kDefaultPathEntries) sh_.assign("PATH", with_entry(value_or_empty(sh_, "PATH"), dir));
    sh_.mark_exported("PATH");
  }

  void inject() {
    sh_.run(injection_script(*in_.injected, in_.evaluate_injected), "the injected variables");
    injected_ = true;
  }

  void runtime_variables() {
    std::string prepend = value_or_empty(sh_, "SING_USER_DEFINED_PREPEND_PATH");
    std::string append = value_or_empty(sh_, "SING_USER_DEFINED_APPEND_PATH");
    std::string replace = value_or_empty(sh_, "SING_USER_DEFINED_PATH");
    if (!prepend.empty()) sh_.assign("PATH", prepend + ":" + value_or_empty(sh_, "PATH"));
    if (!append.empty()) sh_.assign("PATH", value_or_empty(sh_, "PATH") + ":" + append);
    if (!replace.empty()) sh_.assign("PATH", replace);
    for (const char* name : {"SING_USER_DEFINED_PREPEND_PATH", "SING_USER_DEFINED_APPEND_PATH", "SING_USER_DEFINED_PATH"})
      sh_.unset(name);
    sh_.mark_exported("PATH");
    runtime_variables_done_ = true;
  }

  void gpu_library_path() {
    sh_.assign("LD_LIBRARY_PATH", with_entry(value_or_empty(sh_, "LD_LIBRARY_PATH"), gpu::kLibsDir));
    // The script then asks the image's ldconfig for its library directories.
    if (value_or_empty(sh_, "LD_LIBRARY_PATH") == gpu::kLibsDir) needs_shell("--nv puts the image's ldconfig list first");
    sh_.mark_exported("LD_LIBRARY_PATH");
  }

  void library_path_around() {
    std::string libs = value_or_empty(sh_, "LD_LIBRARY_PATH");
    if (libs.empty()) return;
    std::string prepend = value_or_empty(sh_, "PREPEND_LD_LIBRARY_PATH");
    std::string append = value_or_empty(sh_, "APPEND_LD_LIBRARY_PATH");
    if (!prepend.empty()) libs = prepend + ":" + libs;
    if (!append.empty()) libs += ":" + append;
    sh_.assign("LD_LIBRARY_PATH", libs);
    sh_.mark_exported("LD_LIBRARY_PATH");
  }

  // Where the image set nothing the host's value comes back; where it set "", it goes.
  void restore_host_values() {
    for (const auto& [name, value] : held_) {
      if (!sh_.is_set(name)) sh_.set_exported(name, value);
      else if (value_or_empty(sh_, name).empty()) sh_.unset(name);
    }
  }

  void prompt() {
    std::string ps1 = value_or_empty(sh_, "PS1");
    if (ps1.empty()) ps1 = "Apptainer> ";
    sh_.set_exported("PS1", ps1);
    std::string command = value_or_empty(sh_, "PROMPT_COMMAND");
    if (command.empty())
      command = "PS1=\"" + ps1 + "\"; unset PROMPT_COMMAND";
    else
      command += "; PROMPT_COMMAND=\"${PROMPT_COMMAND%%; PROMPT_COMMAND=*}\"; PS1=\"" + ps1 + "\"";
    sh_.set_exported("PROMPT_COMMAND", command);
  }

  const ActionScriptInput& in_;
  const bool lenient_;
  EnvScript sh_;
  const image::ImageFiles& files_;
  std::vector<std::pair<std::string, std::string>> held_;
  bool injected_ = false;
  bool runtime_variables_done_ = false;
};

// Where the shell's `exec` would find `command`: the first regular executable file on
// PATH, as the action script checks it; empty when the shell has to decide.
std::string program_for(const std::string& command, const EnvMap& env) {
  if (command.find('/') != std::string::npos) return stat_is(command, S_IFREG) ? command : "";
  auto it = env.find("PATH");
  return find_executable(command, it == env.end() ? "" : it->second, RelativeEntries::Search);
}

}  // namespace

bool action_shell_forced() {
  const char* forced = std::getenv("CAPSA_ACTION_SHELL");
  return forced != nullptr && *forced != '\0' && std::strcmp(forced, "0") != 0;
}

std::optional<EnvMap> exec_environment_in_process(const ActionScriptInput& input, std::string* why,
                                                  const image::ImageFiles& files, const std::string& root) {
  try {
    return Composer(input, EnvScript::Mode::Strict, files, root).compose();
  } catch (const NeedsShell& needs) {
    *why = needs.what;
    return std::nullopt;
  }
}

EnvMap environment_without_shell(const ActionScriptInput& input, const image::ImageFiles& files,
                                 const std::string& root) {
  return Composer(input, EnvScript::Mode::Lenient, files, root).compose();
}

std::optional<DirectExec> direct_exec(const ActionScriptInput& input, const std::vector<std::string>& args,
                                      std::string* why, const image::ImageFiles& files) {
  if (action_shell_forced()) {
    *why = "CAPSA_ACTION_SHELL is set";
    return std::nullopt;
  }
  if (args.empty()) {
    *why = "no command";
    return std::nullopt;
  }
  std::optional<EnvMap> env = exec_environment_in_process(input, why, files);
  if (!env) return std::nullopt;
  std::string program = program_for(args[0], *env);
  if (program.empty()) {
    *why = args[0] + " is not a file on the container's PATH";
    return std::nullopt;
  }
  return DirectExec{std::move(program), std::move(*env)};
}

}  // namespace capsa::runtime
