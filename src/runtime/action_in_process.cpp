#include "runtime/action_in_process.hpp"

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/action_without_shell.hpp"
#include "runtime/env_script.hpp"
#include "runtime/shell_words.hpp"

namespace capsa::runtime {
namespace {

constexpr const char* kLibsDir = "/.singularity.d/libs";

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

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NeedsShell{path + " cannot be read here"};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> environment_scripts(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) names.push_back(e->d_name);
    ::closedir(d);
  }
  return names;
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

// The action script's steps (action_script.hpp), in its order, on the reader's state.
class Composer {
 public:
  Composer(const ActionScriptInput& in, const std::string& root, const EnvironmentFiles* files)
      : in_(in), root_(root), sh_(root), files_(files) {}

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
  void set_aside_host_values() {
    for (const auto& [name, value] : *in_.process) {
      if (!is_shell_variable_name(name)) throw NeedsShell{"the environment holds " + name + ", not a shell name"};
      if (shell_dependent(name)) throw NeedsShell{"the environment holds " + name + ", which the shell sets"};
      if (kept_through_scripts(name)) sh_.set_exported(name, value);
      else held_.emplace_back(name, value);
    }
    sh_.set_exported("PWD", working_directory(*in_.process));
  }

  // Paths here are the container's; on the live tree they lie below root_.
  std::string on_disk(const std::string& path) const { return root_ == "/" ? path : root_ + path; }

  std::optional<std::vector<std::string>> list(const std::string& dir) const {
    if (files_) return files_->list(dir);
    if (!stat_is(on_disk(dir), S_IFDIR)) return std::nullopt;
    return environment_scripts(on_disk(dir));
  }

  std::optional<std::string> text(const std::string& path) const {
    if (files_) return files_->read(path);
    if (!stat_is(on_disk(path), S_IFREG)) return std::nullopt;
    return text_of(on_disk(path));
  }

  void source(const std::string& path, const std::string& text) { sh_.run(text, path); }

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
        std::optional<std::string> script = text(path);
        if (!script) continue;  // `[ -f ]`: regular files only
        if (name == "10-docker2singularity.sh" || name == "10-docker.sh") {
          source(path, *script);
          fix_path();
        } else if (name == "90-environment.sh") {
          if (!sh_.is_set("PATH")) fix_path();
          source(path, *script);
        } else if (name == "99-base.sh") {
          source(path, *script);
          inject();
        } else if (name == "99-runtimevars.sh") {
          if (injected_) runtime_variables();
        } else {
          source(path, *script);
        }
      }
    } else if (std::optional<std::string> environment = text("/environment")) {
      source("/environment", *environment);
      fix_path();
    }
    if (!injected_) inject();
    if (!runtime_variables_done_) runtime_variables();
  }

  void fix_path() {
    for (const char* dir : kDefaultPathEntries) {
      std::string path = value_or_empty(sh_, "PATH");
      if ((":" + path + ":").find(std::string(":") + dir + ":") == std::string::npos)
        sh_.assign("PATH", path.empty() ? std::string(dir) : path + ":" + dir);
    }
    sh_.mark_exported("PATH");
  }

  void inject() {
    sh_.run(injection_script(*in_.injected), "the injected variables");
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
    std::string libs = value_or_empty(sh_, "LD_LIBRARY_PATH");
    if ((":" + libs + ":").find(std::string(":") + kLibsDir + ":") == std::string::npos)
      sh_.assign("LD_LIBRARY_PATH", libs.empty() ? std::string(kLibsDir) : libs + ":" + kLibsDir);
    // The script then asks the image's ldconfig for its library directories.
    if (value_or_empty(sh_, "LD_LIBRARY_PATH") == kLibsDir) throw NeedsShell{"--nv puts the image's ldconfig list first"};
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
  std::string root_;
  EnvScript sh_;
  const EnvironmentFiles* files_;
  std::vector<std::pair<std::string, std::string>> held_;
  bool injected_ = false;
  bool runtime_variables_done_ = false;
};

// Where the shell's `exec` would find `command`: the first regular executable file on
// PATH, as the action script checks it; empty when the shell has to decide.
std::string program_for(const std::string& command, const EnvMap& env) {
  if (command.find('/') != std::string::npos) return stat_is(command, S_IFREG) ? command : "";
  auto it = env.find("PATH");
  return search_path(command, it == env.end() ? "" : it->second);
}

}  // namespace

bool action_shell_forced() {
  const char* forced = std::getenv("CAPSA_ACTION_SHELL");
  return forced != nullptr && *forced != '\0' && std::strcmp(forced, "0") != 0;
}

std::optional<EnvMap> exec_environment_in_process(const ActionScriptInput& input, std::string* why,
                                                  const std::string& root, const EnvironmentFiles* files) {
  try {
    return Composer(input, root, files).compose();
  } catch (const NeedsShell& needs) {
    *why = needs.what;
    return std::nullopt;
  }
}

void exec_in_process(const ActionScriptInput& input, const std::vector<std::string>& args, std::string* why,
                     const EnvironmentFiles* files) {
  if (action_shell_forced()) {
    *why = "CAPSA_ACTION_SHELL is set";
    return;
  }
  if (args.empty()) {
    *why = "no command";
    return;
  }
  std::optional<EnvMap> env = exec_environment_in_process(input, why, "/", files);
  if (!env) return;
  std::string program = program_for(args[0], *env);
  if (program.empty()) {
    *why = args[0] + " is not a file on the container's PATH";
    return;
  }
  std::vector<std::string> envp_strings = to_envp(*env);
  std::vector<std::string> argv_strings = args;
  std::vector<char*> argv, envp;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : envp_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  // Nothing the container runs may gain privileges (setuid binaries in the image included).
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  ::execve(program.c_str(), argv.data(), envp.data());
  *why = "executing " + program + ": " + std::strerror(errno);
}

}  // namespace capsa::runtime
