#include "runtime/environment.hpp"

#include <algorithm>
#include <optional>
#include <sstream>

#include "runtime/shell_words.hpp"
#include "util/csv_fields.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/shell_quote.hpp"

extern char** environ;

namespace capsa::runtime {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Variables never taken from the host: the container sets its own, or they would point
// at host paths that mean nothing inside.
bool host_only(const std::string& name) {
  return name == "HOME" || name == "PATH" || name == "LD_LIBRARY_PATH" ||
         starts_with(name, "APPTAINER_") || starts_with(name, "SINGULARITY_") || starts_with(name, "APPTAINERENV_") ||
         starts_with(name, "SINGULARITYENV_");
}

// --cleanenv still passes the terminal and the proxies (Apptainer's list).
bool kept_when_clean(const std::string& name) {
  static const char* kept[] = {"TERM", "http_proxy", "https_proxy", "no_proxy", "all_proxy", "ftp_proxy",
                               "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "FTP_PROXY"};
  for (const char* k : kept)
    if (name == k) return true;
  return false;
}

void inject(ComposedEnvironment& out, const std::string& name, const std::string& value, const std::string& from) {
  if (!is_shell_variable_name(name)) throw Error(from + ": \"" + name + "\" is not a valid variable name");
  if (name == "HOME" || name == "APPTAINER_SHELL" || name == "SINGULARITY_SHELL" || name == "APPTAINER_APPNAME" ||
      name == "SINGULARITY_APPNAME") {
    out.warnings.push_back("not setting " + name + " from " + from + ": it is set by capsa");
    return;
  }
  // The PATH family is applied by the runtime-variables step after the image's own
  // environment (Apptainer's SING_USER_DEFINED_* names, which 99-runtimevars.sh reads).
  if (name == "PATH" || name == "PREPEND_PATH" || name == "APPEND_PATH") {
    out.injected["SING_USER_DEFINED_" + name] = value;
    return;
  }
  out.injected[name] = value;
}

void inject_assignment(ComposedEnvironment& out, const std::string& text, const std::string& from) {
  auto eq = text.find('=');
  if (eq == std::string::npos) throw Error(from + ": \"" + text + "\" is not NAME=VALUE");
  inject(out, text.substr(0, eq), text.substr(eq + 1), from);
}

// The assignments of one --env, read as Apptainer reads it (pflag's string-to-string flag):
// with one '=' the whole text is one assignment, double quotes trimmed from both ends
// (`--env A=1,2` sets A to "1,2"); with more, it is a CSV record, so a comma separates
// assignments and a field in double quotes keeps its commas (`--env '"A=a,b",B=c'`).
std::vector<std::string> env_flag_assignments(const std::string& text) {
  const auto equals = std::count(text.begin(), text.end(), '=');
  if (equals == 0) return {text};  // refused as not NAME=VALUE
  if (equals == 1) {
    const auto first = text.find_first_not_of('"'), last = text.find_last_not_of('"');
    return {first == std::string::npos ? "" : text.substr(first, last - first + 1)};
  }
  std::optional<CsvRecord> record = with_context("--env " + text, [&] { return read_csv_record(text); });
  return record ? *record : std::vector<std::string>{};
}

std::string unquote(std::string value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    return value.substr(1, value.size() - 2);
  return value;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text, const std::string& from) {
  std::vector<std::pair<std::string, std::string>> assignments;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    line.erase(0, line.find_first_not_of(" \t"));
    if (line.empty() || line[0] == '#') continue;
    if (starts_with(line, "export ")) line = line.substr(7);
    auto eq = line.find('=');
    if (eq == std::string::npos) throw Error(from + ": \"" + line + "\" is not NAME=VALUE");
    std::string name = line.substr(0, eq);
    if (!is_shell_variable_name(name)) throw Error(from + ": \"" + name + "\" is not a valid variable name");
    assignments.emplace_back(std::move(name), unquote(line.substr(eq + 1)));
  }
  return assignments;
}

ComposedEnvironment compose_environment(const EnvRequest& r) {
  ComposedEnvironment out;
  for (const auto& [name, value] : r.host) {
    if (r.clean ? kept_when_clean(name) : !host_only(name)) out.process[name] = value;
  }
  if (r.clean) out.process["LANG"] = "C";
  out.process["HOME"] = r.home;
  out.process["PATH"] = kDefaultPath;
  std::string name = r.image_path.substr(r.image_path.find_last_of('/') + 1);
  for (const char* prefix : {"APPTAINER_", "SINGULARITY_"}) {
    std::string p = prefix;
    out.process[p + "CONTAINER"] = r.image_path;
    out.process[p + "NAME"] = name;
    out.process[p + "COMMAND"] = r.command;
    out.process[p + "ENVIRONMENT"] = "/.singularity.d/env/91-environment.sh";
    if (!r.binds.empty()) out.process[p + "BIND"] = r.binds;
  }

  // SINGULARITYENV_ first so that APPTAINERENV_ wins, then files, then --env (last wins).
  for (const char* prefix : {"SINGULARITYENV_", "APPTAINERENV_"})
    for (const auto& [var, value] : r.host)
      if (starts_with(var, prefix) && var.size() > std::string(prefix).size())
        inject(out, var.substr(std::string(prefix).size()), value, var);
  for (const std::string& file : r.env_files) {
    const std::string from = "--env-file " + file;
    for (const auto& [var, value] : parse_env_file(read_whole_file(file), from)) inject(out, var, value, from);
  }
  for (const std::string& arg : r.env_args)
    for (const std::string& assignment : env_flag_assignments(arg)) inject_assignment(out, assignment, "--env");
  return out;
}

std::string injection_script(const EnvMap& injected, bool evaluate) {
  // An image whose scripts left PATH unset gets the default one before anything is injected.
  std::string out = "[ -n \"${PATH+x}\" ] || export PATH=" + std::string(kDefaultPath) + "\n";
  for (const auto& [name, value] : injected) {
    if (name == "UID" || name == "GID") continue;  // read-only in bash; Apptainer skips them too
    std::string v = value;
    // Libraries bound in by the runtime stay reachable behind the user's own.
    if (name == "LD_LIBRARY_PATH" && !v.empty()) v += ":/.singularity.d/libs";
    if (!evaluate) {  // --no-eval: single quotes, as Apptainer writes them (process_linux.go)
      out += "export " + name + "=" + single_quoted(v) + "\n";
      continue;
    }
    // Double quotes, as Apptainer (without --no-eval) writes them: the value is
    // evaluated once inside the container ($VAR, $(cmd), backslashes), only `"` is
    // escaped; a trailing lone backslash is doubled so it cannot eat the closing quote.
    std::string quoted = "\"";
    for (char c : v) quoted += c == '"' ? std::string("\\\"") : std::string(1, c);
    std::size_t trailing = 0;
    for (auto it = v.rbegin(); it != v.rend() && *it == '\\'; ++it) ++trailing;
    if (trailing % 2 == 1) quoted += '\\';
    quoted += "\"";
    out += "export " + name + "=" + quoted + "\n";
  }
  return out;
}

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

std::vector<std::string> to_envp(const EnvMap& env) {
  std::vector<std::string> out;
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace capsa::runtime
