#include "runtime/action_script.hpp"

#include <errno.h>  // program_invocation_short_name

#include <set>

#include "runtime/shell_words.hpp"

namespace capsa::runtime {
namespace {

// Apptainer's default PATH entries, appended where an image's PATH lacks them.
constexpr const char* kFunctions =
    "capsa_fixpath() {\n"
    "  for capsa_dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do\n"
    "    case \":${PATH:-}:\" in *\":$capsa_dir:\"*) ;; *) PATH=\"${PATH:+$PATH:}$capsa_dir\" ;; esac\n"
    "  done\n"
    "  unset capsa_dir\n"
    "  export PATH\n"
    "}\n"
    // What Apptainer substitutes for the image's 99-runtimevars.sh.
    "capsa_runtimevars() {\n"
    "  [ -n \"${SING_USER_DEFINED_PREPEND_PATH:-}\" ] && PATH=\"$SING_USER_DEFINED_PREPEND_PATH:$PATH\"\n"
    "  [ -n \"${SING_USER_DEFINED_APPEND_PATH:-}\" ] && PATH=\"$PATH:$SING_USER_DEFINED_APPEND_PATH\"\n"
    "  [ -n \"${SING_USER_DEFINED_PATH:-}\" ] && PATH=\"$SING_USER_DEFINED_PATH\"\n"
    "  unset SING_USER_DEFINED_PREPEND_PATH SING_USER_DEFINED_APPEND_PATH SING_USER_DEFINED_PATH\n"
    "  export PATH\n"
    "  capsa_runtimevars_done=1\n"
    "}\n";

// With --nv, /.singularity.d/libs ends LD_LIBRARY_PATH (the image's 99-base.sh appends it;
// images without one get it here, also after an injected LD_LIBRARY_PATH). When it is the
// only entry, the container's own library directories (its `ldconfig -Nv` list) go first
// so that its libraries win over same-named host ones, as Apptainer 1.5+ does (§3.4).
constexpr const char* kGpuLibraryPath =
    "case \":${LD_LIBRARY_PATH:-}:\" in *:/.singularity.d/libs:*) ;; "
    "*) LD_LIBRARY_PATH=\"${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/.singularity.d/libs\" ;; esac\n"
    "if [ \"$LD_LIBRARY_PATH\" = /.singularity.d/libs ] && command -v ldconfig >/dev/null 2>&1; then\n"
    "  LD_LIBRARY_PATH=\"$(ldconfig -Nv 2>/dev/null | sed -n 's,^\\(/[^:]*\\):.*,\\1,p' | tr '\\n' :)$LD_LIBRARY_PATH\"\n"
    "fi\n"
    "export LD_LIBRARY_PATH\n";

constexpr const char* kSourceEnvironment =
    "if [ -d /.singularity.d/env ]; then\n"
    "  for capsa_env in /.singularity.d/env/*.sh; do\n"
    "    [ -f \"$capsa_env\" ] || continue\n"
    "    case \"$capsa_env\" in\n"
    "      /.singularity.d/env/10-docker2singularity.sh|/.singularity.d/env/10-docker.sh)\n"
    "        . \"$capsa_env\"; capsa_fixpath ;;\n"
    "      /.singularity.d/env/90-environment.sh)\n"
    "        [ -n \"${PATH+x}\" ] || capsa_fixpath\n"
    "        . \"$capsa_env\" ;;\n"
    "      /.singularity.d/env/99-base.sh)\n"
    "        . \"$capsa_env\"; capsa_inject ;;\n"
    "      /.singularity.d/env/99-runtimevars.sh)\n"
    "        [ -z \"${capsa_injected:-}\" ] || capsa_runtimevars ;;\n"
    "      *)\n"
    "        . \"$capsa_env\" ;;\n"
    "    esac\n"
    "  done\n"
    "  unset capsa_env\n"
    "elif [ -f /environment ]; then\n"
    "  . /environment; capsa_fixpath\n"
    "fi\n"
    "[ -n \"${capsa_injected:-}\" ] || capsa_inject\n"
    "[ -n \"${capsa_runtimevars_done:-}\" ] || capsa_runtimevars\n";

// Apptainer 1.5+: PREPEND_LD_LIBRARY_PATH / APPEND_LD_LIBRARY_PATH around the result.
constexpr const char* kLibraryPathAround =
    "if [ -n \"${LD_LIBRARY_PATH:-}\" ]; then\n"
    "  [ -n \"${PREPEND_LD_LIBRARY_PATH:-}\" ] && LD_LIBRARY_PATH=\"$PREPEND_LD_LIBRARY_PATH:$LD_LIBRARY_PATH\"\n"
    "  [ -n \"${APPEND_LD_LIBRARY_PATH:-}\" ] && LD_LIBRARY_PATH=\"$LD_LIBRARY_PATH:$APPEND_LD_LIBRARY_PATH\"\n"
    "  export LD_LIBRARY_PATH\n"
    "fi\n";

constexpr const char* kPrompt =
    "[ -n \"${PS1:-}\" ] || PS1='Apptainer> '\n"
    "export PS1\n"
    "if [ -z \"${PROMPT_COMMAND:-}\" ]; then\n"
    "  PROMPT_COMMAND=\"PS1=\\\"$PS1\\\"; unset PROMPT_COMMAND\"\n"
    "else\n"
    "  PROMPT_COMMAND=\"$PROMPT_COMMAND; PROMPT_COMMAND=\\\"\\${PROMPT_COMMAND%%; PROMPT_COMMAND=*}\\\"; PS1=\\\"$PS1\\\"\"\n"
    "fi\n"
    "export PROMPT_COMMAND\n";

std::string dispatch(const std::string& action) {
  if (action == "exec") {
    // A command the container does not have ends with Apptainer's words and status 127
    // (the shell's own message names the shell, not the command's PATH).
    return std::string("capsa_program='") + program_invocation_short_name + "'\n" +
           "case \"$1\" in\n"
           "  */*) if [ ! -e \"$1\" ]; then\n"
           "         printf '%s: error: \"%s\": no such file or directory\\n' \"$capsa_program\" \"$1\" >&2; exit 127\n"
           "       fi ;;\n"
           "  *) capsa_found=; capsa_ifs=$IFS; IFS=:\n"
           "     for capsa_dir in $PATH; do\n"
           "       if [ -f \"${capsa_dir:-.}/$1\" ] && [ -x \"${capsa_dir:-.}/$1\" ]; then capsa_found=1; break; fi\n"
           "     done\n"
           "     IFS=$capsa_ifs\n"
           // Not a file on PATH, but the shell may still run it (busybox applets, builtins).
           "     [ -n \"$capsa_found\" ] || capsa_found=$(command -v \"$1\")\n"
           "     if [ -z \"$capsa_found\" ]; then\n"
           "       printf '%s: error: \"%s\": executable file not found in $PATH\\n' \"$capsa_program\" \"$1\" >&2; exit 127\n"
           "     fi\n"
           "     unset capsa_found capsa_ifs capsa_dir ;;\n"
           "esac\n"
           "unset capsa_program\n"
           "exec \"$@\"\n";
  }
  // --app NAME: the app's own script (Apptainer's action_script.sh, with its words).
  auto app_script = [](const char* script, const char* missing) {
    return std::string(
               "if [ -n \"${SINGULARITY_APPNAME:-}\" ]; then\n"
               "  if [ -x \"/scif/apps/$SINGULARITY_APPNAME/scif/") +
           script + "\" ]; then exec \"/scif/apps/$SINGULARITY_APPNAME/scif/" + script + "\" \"$@\"; fi\n" +
           "  echo \"ERROR:   " + missing + ": $SINGULARITY_APPNAME\" >&2\n  exit 1\nfi\n";
  };
  if (action == "run")
    return app_script("runscript", "no runscript for contained app") +
           "if [ -x /.singularity.d/runscript ]; then exec /.singularity.d/runscript \"$@\"; fi\n"
           "if [ -x /singularity ]; then exec /singularity \"$@\"; fi\n"
           "echo 'no runscript in this container: running /bin/sh' >&2\n"
           "exec /bin/sh \"$@\"\n";
  if (action == "start")  // an instance (Apptainer's action script): the start script, if any
    return "if [ -x /.singularity.d/startscript ]; then exec /.singularity.d/startscript \"$@\"; fi\n"
           "exit 0\n";
  if (action == "shell")
    return "capsa_shell=\"${APPTAINER_SHELL:-${SINGULARITY_SHELL:-}}\"\n"
           "if [ -n \"$capsa_shell\" ] && [ -x \"$capsa_shell\" ]; then exec \"$capsa_shell\" \"$@\"; fi\n"
           "if [ -x /bin/bash ]; then SHELL=/bin/bash; export SHELL; exec /bin/bash --norc \"$@\"; fi\n"
           "SHELL=/bin/sh; export SHELL; exec /bin/sh \"$@\"\n";
  return app_script("test", "No tests for contained app") +
         "if [ -x /.singularity.d/test ]; then exec /.singularity.d/test \"$@\"; fi\n"
         "echo 'INFO:    no test script in this container' >&2\n"  // as log::info (util/log.hpp)
         "exit 0\n";
}

}  // namespace

// Apptainer's list, plus names a bash /bin/sh holds read-only, which cannot be unset.
bool kept_through_scripts(const std::string& name) {
  static const std::set<std::string> kept = {
      "PWD", "HOME", "OPTIND", "UID", "GID", "SINGULARITY_APPNAME", "SINGULARITY_SHELL", "APPTAINER_NAME",
      "APPTAINER_CONTAINER", "APPTAINER_INSTANCE", "EUID", "PPID", "SHELLOPTS", "BASHOPTS", "BASH_VERSINFO"};
  return kept.count(name) != 0;
}

std::string action_script(const ActionScriptInput& in) {
  std::string set_aside, restore;
  for (const auto& [name, value] : *in.process) {
    if (!is_shell_variable_name(name) || kept_through_scripts(name)) continue;
    // Unexported shell variables: they never reach the command's environment.
    set_aside += "capsa_h_" + name + "=$" + name + "; unset " + name + "\n";
    restore += "if [ -z \"${" + name + "+x}\" ]; then " + name + "=$capsa_h_" + name + "; export " + name +
               "; elif [ -z \"$" + name + "\" ]; then unset " + name + "; fi; unset capsa_h_" + name + "\n";
  }
  // PS1: the shell's own default is not the host's (it came back in set_aside if it was).
  std::string script = "export PWD\n" + set_aside + "unset PS1\n" + kFunctions;
  const bool deadline = in.deadline_reached_fd >= 0 && in.deadline_go_fd >= 0;
  // Past the deadline the watchdog signals the shell (script_watchdog.hpp): Apptainer's 255.
  if (deadline) script.insert(0, "trap 'exit 255' ALRM INT\n");
  script += "capsa_inject() {\n" + injection_script(*in.injected, in.evaluate_injected) + "capsa_injected=1\n}\n";
  script += kSourceEnvironment;
  if (in.gpu_libraries) script += kGpuLibraryPath;
  script += kLibraryPathAround;
  script += restore;
  script += kPrompt;
  script += "unset capsa_injected capsa_runtimevars_done\n";
  if (deadline) {
    // The action is reached: the watchdog answers if the deadline has not passed, and
    // the command starts with neither the pipes nor the trap.
    const std::string reached = std::to_string(in.deadline_reached_fd), go = std::to_string(in.deadline_go_fd);
    script += "printf . >&" + reached + "; IFS= read -r capsa_go <&" + go + " || exit 255\nexec " + reached + ">&- " +
              go + "<&-; unset capsa_go; trap - ALRM INT\n";
  }
  script += dispatch(in.action);
  return script;
}

}  // namespace capsa::runtime
