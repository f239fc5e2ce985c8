#include "spank/container_request.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace capsa::spank {
namespace {

// Splits on `separator`, keeping empty fields (so that "a,,b" is refused, not read as "a,b").
std::vector<std::string> split(const std::string& text, char separator) {
  if (text.empty()) return {""};
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!text.empty() && text.back() == separator) fields.emplace_back();
  return fields;
}

// A newline would split the words handed to the task helper (encode_words).
void refuse_newline(const std::string& option, const std::string& value) {
  if (value.find('\n') != std::string::npos)
    throw RequestError("--" + option + ": the value holds a newline: give it on one line");
}

std::string require_value(const std::string& option, const char* value) {
  if (value == nullptr || *value == '\0') throw RequestError("--" + option + " needs a value");
  std::string text = value;
  refuse_newline(option, text);
  return text;
}

bool valid_container_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-'; });
}

bool valid_variable_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isalnum(c) != 0 || c == '_'; });
}

std::string mount_path(const std::string& entry, const std::string& path, const char* what) {
  if (path.empty() || path.front() != '/')
    throw RequestError("--container-mounts: " + std::string(what) + " of '" + entry +
                       "' must be an absolute path (SRC[:DST[:ro|rw]])");
  return path;
}

}  // namespace

std::string ContainerMount::bind_spec() const { return source + ":" + destination + (read_only ? ":ro" : ""); }

std::string capsa_image(const std::string& value) {
  if (value.empty()) throw RequestError("--container-image needs a value");
  if (value.front() == '/') return value;
  if (value.starts_with("./") || value.starts_with("../"))
    throw RequestError("--container-image: '" + value + "' is relative: give the image file's absolute path");
  for (const char* scheme : {"oras://", "library://"})
    if (value.starts_with(scheme)) return value;
  std::string reference = value;
  if (reference.starts_with("docker://")) reference.erase(0, 9);
  const auto scheme = reference.find("://");
  if (scheme != std::string::npos)
    throw RequestError(
        "--container-image: '" + value +
        "' has a scheme capsa's plugin does not take: use docker://, oras://, library:// or a file path");
  const auto at = reference.find('@');
  const auto hash = reference.find('#');
  // enroot's USER@REGISTRY#IMAGE carries a login name; capsa takes credentials from
  // `capsa registry login` only (never from the command line, where others see them).
  if (at != std::string::npos && hash != std::string::npos && at < hash)
    throw RequestError("--container-image: a user name in '" + value +
                       "' is not taken: log in with `capsa registry login` and drop 'USER@'");
  if (hash != std::string::npos) reference[hash] = '/';
  if (reference.empty() || reference.front() == '/')
    throw RequestError("--container-image: '" + value + "' names no image");
  return "docker://" + reference;
}

std::vector<ContainerMount> parse_mounts(const std::string& value) {
  std::vector<ContainerMount> mounts;
  for (const auto& entry : split(value, ',')) {
    if (entry.empty()) throw RequestError("--container-mounts: an empty entry in '" + value + "'");
    const auto fields = split(entry, ':');
    if (fields.size() > 3)
      throw RequestError("--container-mounts: '" + entry + "' has too many ':' (SRC[:DST[:ro|rw]])");
    ContainerMount mount;
    mount.source = mount_path(entry, fields[0], "the source");
    mount.destination = fields.size() > 1 ? mount_path(entry, fields[1], "the destination") : mount.source;
    if (fields.size() == 3) {
      if (fields[2] == "ro")
        mount.read_only = true;
      else if (fields[2] != "rw")
        throw RequestError("--container-mounts: the flag '" + fields[2] + "' of '" + entry +
                           "' is not supported (ro or rw)");
    }
    mounts.push_back(mount);
  }
  return mounts;
}

std::vector<std::string> parse_env_names(const std::string& value) {
  std::vector<std::string> names;
  for (const auto& name : split(value, ',')) {
    if (!valid_variable_name(name))
      throw RequestError("--container-env: '" + name + "' is not a variable name (NAME[,NAME...])");
    names.push_back(name);
  }
  return names;
}

void apply_option(ContainerRequest& request, const std::string& option, const char* value) {
  if (option == "container-image") {
    request.image = capsa_image(require_value(option, value));
  } else if (option == "container-mounts") {
    // Options given to sbatch or salloc reach each srun of the job again through the
    // environment (SLURM_SPANK__SLURM_SPANK_OPTION_capsa_*), and Slurm may hand one value
    // over twice: an entry already there is not added again.
    for (const auto& mount : parse_mounts(require_value(option, value)))
      if (std::none_of(request.mounts.begin(), request.mounts.end(),
                       [&](const ContainerMount& m) { return m.bind_spec() == mount.bind_spec(); }))
        request.mounts.push_back(mount);
  } else if (option == "container-workdir") {
    request.workdir = require_value(option, value);
    if (request.workdir.front() != '/')
      throw RequestError("--container-workdir: '" + request.workdir + "' must be an absolute path");
  } else if (option == "container-name") {
    request.name = require_value(option, value);
    if (request.name.find(':') != std::string::npos)
      throw RequestError("--container-name: the ':FLAGS' of pyxis are not supported: give NAME only");
    if (!valid_container_name(request.name))
      throw RequestError("--container-name: '" + request.name +
                         "' must be 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'");
  } else if (option == "container-writable") {
    request.writable = true;
  } else if (option == "container-readonly") {
    request.writable = false;
  } else if (option == "container-remap-root") {
    request.remap_root = true;
  } else if (option == "no-container-remap-root") {
    request.remap_root = false;
  } else if (option == "container-env") {
    for (const auto& name : parse_env_names(require_value(option, value)))
      if (std::find(request.env_names.begin(), request.env_names.end(), name) == request.env_names.end())
        request.env_names.push_back(name);
  } else if (option == "container-mount-home") {
    request.mount_home = true;
  } else if (option == "no-container-mount-home") {
    request.mount_home = false;
  } else if (option == "container-save") {
    request.save_path = require_value(option, value);
    if (request.save_path.back() == '/')
      throw RequestError("--container-save: '" + request.save_path + "' names a directory: give the image file's path");
  } else if (option == "container-entrypoint") {
    request.entrypoint = true;
  } else if (option == "no-container-entrypoint") {
    request.entrypoint = false;
  } else {
    throw RequestError("--" + option + " is not an option of capsa's plugin");
  }
}

std::vector<std::string> instance_start_argv(const std::string& capsa, const ContainerRequest& request,
                                             const std::string& image, const std::string& instance,
                                             const NamedState* named) {
  std::vector<std::string> argv = {capsa, "instance", "start"};
  for (const auto& mount : request.mounts) {
    argv.emplace_back("--bind");
    argv.push_back(mount.bind_spec());
  }
  if (!request.mount_home) argv.emplace_back("--no-home");
  if (request.remap_root) argv.emplace_back("--fakeroot");
  if (named != nullptr) {
    argv.emplace_back("--overlay");
    argv.push_back(named->overlay_dir + (request.writable ? "" : ":ro"));
  } else if (request.writable) {
    argv.emplace_back("--writable-tmpfs");
  }
  argv.push_back(image);
  argv.push_back(instance);
  return argv;
}

std::vector<std::string> task_exec_prefix(const std::string& capsa, const ContainerRequest& request,
                                          const std::string& instance) {
  std::vector<std::string> argv = {capsa, request.entrypoint ? "run" : "exec"};
  if (!request.workdir.empty()) {
    argv.emplace_back("--pwd");
    argv.push_back(request.workdir);
  }
  argv.push_back("instance://" + instance);
  return argv;
}

std::string save_target(const std::string& path, const std::string& job_dir) {
  if (path.front() == '/') return path;
  if (job_dir.empty() || job_dir.front() != '/')
    throw RequestError("--container-save: '" + path +
                       "' is relative and the job has no working directory: give an absolute path");
  return job_dir + (job_dir.back() == '/' ? "" : "/") + path;
}

std::vector<std::string> instance_save_argv(const std::string& capsa, const std::string& instance,
                                            const std::string& file) {
  return {capsa, "instance", "save", instance, file};
}

std::string encode_flags(const ContainerRequest& request) {
  auto bit = [](bool on) { return on ? "1" : "0"; };
  return std::string("writable=") + bit(request.writable) + ",remap-root=" + bit(request.remap_root) +
         ",mount-home=" + bit(request.mount_home) + ",entrypoint=" + bit(request.entrypoint);
}

void apply_flags(ContainerRequest& request, const std::string& text) {
  for (const auto& field : split(text, ',')) {
    const auto equals = field.find('=');
    if (equals == std::string::npos) continue;
    const std::string name = field.substr(0, equals), value = field.substr(equals + 1);
    if (value != "0" && value != "1") continue;
    const bool on = value == "1";
    if (name == "writable")
      request.writable = on;
    else if (name == "remap-root")
      request.remap_root = on;
    else if (name == "mount-home")
      request.mount_home = on;
    else if (name == "entrypoint")
      request.entrypoint = on;
  }
}

std::string joined_mounts(const ContainerRequest& request) {
  std::string text;
  for (const auto& mount : request.mounts) text += (text.empty() ? "" : ",") + mount.bind_spec();
  return text;
}

std::string joined_env_names(const ContainerRequest& request) {
  std::string text;
  for (const auto& name : request.env_names) text += (text.empty() ? "" : ",") + name;
  return text;
}

std::string encode_words(const std::vector<std::string>& words) {
  std::string text;
  for (const auto& word : words) {
    if (word.find('\n') != std::string::npos) throw RequestError("a word of the task's command holds a newline");
    if (!text.empty()) text += '\n';
    text += word;
  }
  return text;
}

std::vector<std::string> decode_words(const std::string& text) {
  if (text.empty()) return {};
  return split(text, '\n');
}

std::vector<std::string> task_argv(const std::vector<std::string>& prefix, const std::string& argv0,
                                   const std::vector<std::string>& rest) {
  std::vector<std::string> argv = prefix;
  argv.push_back(argv0);
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

std::string instance_name(unsigned long job_id, unsigned long step_id) {
  return "spank-" + std::to_string(job_id) + "." + std::to_string(step_id);
}

}  // namespace capsa::spank
