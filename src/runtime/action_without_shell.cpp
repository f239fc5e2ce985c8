#include "runtime/action_without_shell.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "runtime/shell_words.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"

namespace capsa::runtime {
namespace {

// The line Apptainer recognises as a generated Docker runscript (capsa writes it too).
constexpr const char* kDockerRunscriptMarker = "eval \"set ${SINGULARITY_OCI_RUN}\"";

std::string lookup(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
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

std::string find_command(const std::string& command, const EnvMap& env) {
  if (command.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(command.c_str(), &st) != 0) throw StatusError("\"" + command + "\": no such file or directory", 127);
    return command;
  }
  std::string found = find_executable(command, lookup(env, "PATH"), RelativeEntries::Search);
  if (found.empty()) throw StatusError("\"" + command + "\": executable file not found in $PATH", 127);
  return found;
}

std::vector<std::string> action_argv_without_shell(const std::string& action, const std::vector<std::string>& args,
                                                   const EnvMap& env, const std::string& root) {
  std::vector<std::string> argv;
  if (const std::string app = lookup(env, "SINGULARITY_APPNAME");
      !app.empty() && (action == "run" || action == "test")) {
    // --app NAME: the app's own script, as the action script runs it.
    const std::string script = "/scif/apps/" + app + "/scif/" + (action == "run" ? "runscript" : "test");
    if (!executable_file(root + script))
      throw Error(std::string(action == "run" ? "no runscript" : "no tests") + " for contained app: " + app);
    argv = {script};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  if (action == "exec") {
    argv = args;
  } else if (action == "run") {
    std::string runscript = root + "/.singularity.d/runscript";
    if (executable_file(runscript)) {
      std::string text = read_whole_file(runscript);
      if (text.find(kDockerRunscriptMarker) != std::string::npos) return docker_run_argv(text, args, env);
      argv = {"/.singularity.d/runscript"};
    } else if (executable_file(root + "/singularity")) {
      argv = {"/singularity"};
    } else {
      throw Error("the image has neither a runscript nor /bin/sh to run (use `capsa exec IMAGE COMMAND`)");
    }
    argv.insert(argv.end(), args.begin(), args.end());
  } else if (action == "start") {  // an instance: its start script, if any
    if (!executable_file(root + "/.singularity.d/startscript")) return {};
    argv = {"/.singularity.d/startscript"};
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
