#include "runtime/action_without_shell.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "runtime/shell_words.hpp"
#include "util/error.hpp"

namespace capsa::runtime {
namespace {

constexpr const char* kLibsDir = "/.singularity.d/libs";
// The line Apptainer recognises as a generated Docker runscript (capsa writes it too).
constexpr const char* kDockerRunscriptMarker = "eval \"set ${SINGULARITY_OCI_RUN}\"";

std::string lookup(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == ';') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

// The shell state an environment file builds: exported variables (the process's
// environment) and plain shell variables, which only later expansions see.
struct ShellState {
  EnvMap& env;
  EnvMap locals;
  int depth = 0;  // inside if/for/while/case: conditional, so not applied

  EnvMap visible() const {
    EnvMap all = locals;
    for (const auto& [name, value] : env) all[name] = value;
    return all;
  }

  void assign(const std::string& text, bool exported) {
    std::size_t eq = text.find('=');
    std::string name = text.substr(0, eq);
    if (eq == std::string::npos || !is_shell_variable_name(name)) return;
    std::string value;
    if (!expand_shell_word(text.substr(eq + 1), visible(), &value)) return;
    if (exported || env.count(name)) {
      env[name] = value;
      locals.erase(name);
    } else {
      locals[name] = value;
    }
  }

  // Top-level `export NAME=WORD`, `export NAME`, `NAME=WORD` and `unset NAME`; compound
  // commands are skipped whole, since their conditions need a shell.
  void apply(std::string line) {
    line.erase(0, line.find_first_not_of(" \t"));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.pop_back();
    if (line.empty() || line[0] == '#') return;
    std::vector<std::string> words = words_of(line);
    int opened = 0;
    for (const std::string& w : words) {
      if (w == "if" || w == "for" || w == "while" || w == "until" || w == "case") ++opened;
      if (w == "fi" || w == "done" || w == "esac") --opened;
    }
    bool top_level = depth == 0 && opened == 0;
    depth = std::max(0, depth + opened);
    if (!top_level) return;
    if (line.rfind("export ", 0) == 0) {
      std::string rest = line.substr(7);
      rest.erase(0, rest.find_first_not_of(" \t"));
      if (rest.find('=') != std::string::npos) {
        assign(rest, true);
        return;
      }
      for (std::size_t i = 1; i < words.size(); ++i)
        if (auto it = locals.find(words[i]); it != locals.end()) {
          env[words[i]] = it->second;
          locals.erase(it);
        }
    } else if (line.rfind("unset ", 0) == 0) {
      for (std::size_t i = 1; i < words.size(); ++i) {
        env.erase(words[i]);
        locals.erase(words[i]);
      }
    } else if (line.find('=') != std::string::npos && is_shell_variable_name(line.substr(0, line.find('=')))) {
      assign(line, false);  // NAME="a b": one word once quoted; expand_shell_word refuses anything else
    }
  }
};

void apply_environment_file(const std::string& path, EnvMap& env) {
  std::ifstream in(path);
  ShellState state{env, {}, 0};
  for (std::string line; std::getline(in, line);) state.apply(line);
}

std::vector<std::string> environment_files(const std::string& root) {
  std::vector<std::string> names;
  std::string dir = root + "/.singularity.d/env";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 3 && name.compare(name.size() - 3, 3, ".sh") == 0) names.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());  // the glob's order
  return names;
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value of `NAME='...'` in a runscript: the OCI array as double-quoted words.
std::vector<std::string> oci_array(const std::string& runscript, const std::string& name, const EnvMap& env) {
  std::istringstream lines(runscript);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "=", 0) != 0) continue;
    std::string words;
    if (!expand_shell_word(line.substr(name.size() + 1), env, &words)) break;
    // One round of evaluation, as Apptainer's `eval "set ..."` gives them.
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < words.size()) {
      if (words[pos] == ' ') {
        ++pos;
        continue;
      }
      std::size_t end = pos;
      if (words[pos] == '"') {
        for (end = pos + 1; end < words.size() && words[end] != '"'; ++end)
          if (words[end] == '\\') ++end;
        ++end;
      } else {
        while (end < words.size() && words[end] != ' ') ++end;
      }
      std::string word;
      if (!expand_shell_word(words.substr(pos, end - pos), env, &word))
        throw Error("/.singularity.d/runscript: cannot evaluate " + name + " without a shell in the image");
      out.push_back(word);
      pos = end;
    }
    return out;
  }
  return {};
}

// Docker's rules, as the generated runscript applies them.
std::vector<std::string> docker_run_argv(const std::string& runscript, const std::vector<std::string>& args,
                                         const EnvMap& env) {
  std::vector<std::string> argv = oci_array(runscript, "OCI_ENTRYPOINT", env);
  if (!args.empty()) argv.insert(argv.end(), args.begin(), args.end());
  else for (auto& word : oci_array(runscript, "OCI_CMD", env)) argv.push_back(word);
  if (argv.empty()) throw Error("this image has no ENTRYPOINT or CMD: give the command to run");
  return argv;
}

}  // namespace

EnvMap environment_without_shell(const EnvMap& process, const EnvMap& injected, const std::string& root) {
  EnvMap env = process;
  for (const std::string& name : environment_files(root)) {
    std::string path = root + "/.singularity.d/env/" + name;
    if (name == "99-base.sh") {
      // Driver libraries (--nv) go last on the library path; the prompt gets a default.
      std::string libs = lookup(env, "LD_LIBRARY_PATH");
      env["LD_LIBRARY_PATH"] = libs.empty() ? kLibsDir : libs + ":" + kLibsDir;
      if (lookup(env, "PS1").empty()) env["PS1"] = "Apptainer> ";
    } else if (name == "99-runtimevars.sh") {
      std::string prepend = lookup(env, "SING_USER_DEFINED_PREPEND_PATH");
      std::string append = lookup(env, "SING_USER_DEFINED_APPEND_PATH");
      std::string replace = lookup(env, "SING_USER_DEFINED_PATH");
      if (!prepend.empty()) env["PATH"] = prepend + ":" + lookup(env, "PATH");
      if (!append.empty()) env["PATH"] = lookup(env, "PATH") + ":" + append;
      if (!replace.empty()) env["PATH"] = replace;
      for (const char* var : {"SING_USER_DEFINED_PREPEND_PATH", "SING_USER_DEFINED_APPEND_PATH", "SING_USER_DEFINED_PATH"})
        env.erase(var);
    } else {
      apply_environment_file(path, env);
    }
  }
  for (const auto& [name, value] : injected) env[name] = value;
  return env;
}

std::string search_path(const std::string& command, const std::string& path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + command;
    if (executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

std::string find_command(const std::string& command, const EnvMap& env) {
  if (command.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(command.c_str(), &st) != 0) throw StatusError("\"" + command + "\": no such file or directory", 127);
    return command;
  }
  std::string found = search_path(command, lookup(env, "PATH"));
  if (found.empty()) throw StatusError("\"" + command + "\": executable file not found in $PATH", 127);
  return found;
}

std::vector<std::string> action_argv_without_shell(const std::string& action, const std::vector<std::string>& args,
                                                   const EnvMap& env, const std::string& root) {
  std::vector<std::string> argv;
  if (action == "exec") {
    argv = args;
  } else if (action == "run") {
    std::string runscript = root + "/.singularity.d/runscript";
    if (executable_file(runscript)) {
      std::string text = read_text(runscript);
      if (text.find(kDockerRunscriptMarker) != std::string::npos) return docker_run_argv(text, args, env);
      argv = {"/.singularity.d/runscript"};
    } else if (executable_file(root + "/singularity")) {
      argv = {"/singularity"};
    } else {
      throw Error("the image has neither a runscript nor /bin/sh to run (use `capsa exec IMAGE COMMAND`)");
    }
    argv.insert(argv.end(), args.begin(), args.end());
  } else if (action == "test") {
    if (!executable_file(root + "/.singularity.d/test")) return {};
    argv = {"/.singularity.d/test"};
    argv.insert(argv.end(), args.begin(), args.end());
  } else {  // shell
    std::string wanted = lookup(env, "APPTAINER_SHELL");
    if (!wanted.empty() && executable_file(root + wanted)) argv = {wanted};
    else if (executable_file(root + "/bin/bash")) argv = {"/bin/bash", "--norc"};
    else throw Error("the image has no shell (/bin/sh is missing; use `capsa exec IMAGE COMMAND`)");
    argv.insert(argv.end(), args.begin(), args.end());
  }
  return argv;
}

}  // namespace capsa::runtime
