#include "spank/named_container.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "util/own_directory.hpp"

namespace capsa::spank {
namespace {

void make_private_dir(const std::string& path, uid_t uid) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::runtime_error("cannot make " + path + " for the named container: " + std::strerror(errno));
  if (!is_own_directory(path, uid))
    throw std::runtime_error(path + " is not a directory of yours: remove it, or set statedir= in plugstack.conf");
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::string user_state_dir(const std::string& state_dir, uid_t uid, bool make) {
  return own_directory(state_dir, "capsa-spank-" + std::to_string(uid), uid, make);
}

std::string named_job_dir(const std::string& user_dir, const std::string& host, const std::string& job) {
  return user_dir + "/" + host + "/" + job;
}

NamedPaths named_container_paths(const std::string& user_dir, const std::string& host, const std::string& job,
                                 const std::string& name) {
  NamedPaths paths;
  paths.user_dir = user_dir;
  paths.host_dir = paths.user_dir + "/" + host;
  paths.job_dir = named_job_dir(user_dir, host, job);
  paths.overlay_dir = paths.job_dir + "/" + name;
  paths.image_file = paths.job_dir + "/" + name + ".image";
  return paths;
}

std::string prepare_named_container(const NamedPaths& paths, uid_t uid, const std::string& image) {
  for (const auto* dir : {&paths.user_dir, &paths.host_dir, &paths.job_dir, &paths.overlay_dir})
    make_private_dir(*dir, uid);
  make_private_dir(paths.overlay_dir + "/upper", uid);
  const std::string name = paths.overlay_dir.substr(paths.overlay_dir.rfind('/') + 1);
  std::string recorded = read_text(paths.image_file);
  if (image.empty()) {
    if (recorded.empty())
      throw std::runtime_error("--container-name " + name +
                               ": no container of that name in this job on this node: give --container-image too");
    return recorded;
  }
  if (!recorded.empty() && recorded != image)
    throw std::runtime_error("--container-name " + name + " was made from " + recorded + ", not " + image +
                             ": drop --container-image or choose another name");
  if (recorded.empty()) {
    const std::string temporary = paths.image_file + ".tmp";
    {
      std::ofstream out(temporary, std::ios::trunc);
      out << image << '\n';
      if (!out.flush()) throw std::runtime_error("cannot write " + temporary);
    }
    if (std::rename(temporary.c_str(), paths.image_file.c_str()) != 0)
      throw std::runtime_error("cannot write " + paths.image_file + ": " + std::strerror(errno));
  }
  return image;
}

}  // namespace capsa::spank
