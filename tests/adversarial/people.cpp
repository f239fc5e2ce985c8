#include "people.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "../config/site_prefix.hpp"
#include "support/test_env.hpp"

namespace capsa::adversarial {
namespace {

namespace fs = std::filesystem;

Person person_named(const char* variable, const char* fallback) {
  const char* name = std::getenv(variable);
  passwd* pw = ::getpwnam(name != nullptr && *name != '\0' ? name : fallback);
  // Not a skip: a suite that skips its attacks proves nothing (scripts/test.sh makes both).
  if (pw == nullptr)
    throw std::runtime_error(std::string("no test user ") + fallback + ": run scripts/create-test-user.sh as root");
  return {pw->pw_uid, pw->pw_gid, pw->pw_name, pw->pw_dir};
}

}  // namespace

const Person& victim() {
  static const Person person = person_named("CAPSA_TEST_USER", "capsa-test");
  return person;
}

const Person& attacker() {
  static const Person person = person_named("CAPSA_TEST_OTHER_USER", "capsa-other");
  return person;
}

std::vector<std::string> argv_as(const Person& who, const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env) {
  std::vector<std::string> full = {"setpriv",
                                   "--reuid=" + std::to_string(who.uid),
                                   "--regid=" + std::to_string(who.gid),
                                   "--init-groups",
                                   "--inh-caps=-all",
                                   "env",
                                   "HOME=" + who.home,
                                   "USER=" + who.name,
                                   "LOGNAME=" + who.name};
  full.insert(full.end(), env.begin(), env.end());
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

test::ProcessResult run_as(const Person& who, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           int timeout_seconds) {
  return test::run_process(argv_as(who, argv, env), "", timeout_seconds);
}

test::ProcessResult shell_as(const Person& who, const std::string& script, int timeout_seconds) {
  return run_as(who, {"sh", "-c", script}, {}, timeout_seconds);
}

std::string site_capsa() { return config::testing::SitePrefix::get().path() + "/bin/capsa"; }

std::string site_capsa_full() { return config::testing::SitePrefix::get().path() + "/libexec/capsa/capsa-full"; }

void write_site_conf(const std::string& text) { config::testing::SitePrefix::get().write_conf(text); }

test::ProcessResult capsa_as(const Person& who, const std::vector<std::string>& args,
                             const std::vector<std::string>& env, int timeout_seconds) {
  std::vector<std::string> argv = {site_capsa()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_as(who, argv, env, timeout_seconds);
}

OwnedDir::OwnedDir(const Person& owner, mode_t mode) : uid_(owner.uid), gid_(owner.gid) {
  std::string pattern = "/tmp/capsa-adversarial-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
  if (::chown(path_.c_str(), uid_, gid_) != 0 || ::chmod(path_.c_str(), mode) != 0)
    throw std::runtime_error("chown/chmod " + path_);
}

OwnedDir::~OwnedDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::string OwnedDir::write(const std::string& name, const std::string& content, mode_t mode) const {
  const std::string path = path_ + "/" + name;
  std::ofstream(path, std::ios::trunc | std::ios::binary) << content;
  if (::chown(path.c_str(), uid_, gid_) != 0 || ::chmod(path.c_str(), mode) != 0)
    throw std::runtime_error("chown/chmod " + path);
  return path;
}

std::string image_owned_by(const Person& owner, const OwnedDir& dir, const std::string& name) {
  const std::string path = dir / name;
  fs::copy_file(test::sif_fixture("real/busybox_amd64.sif"), path, fs::copy_options::overwrite_existing);
  if (::chown(path.c_str(), owner.uid, owner.gid) != 0 || ::chmod(path.c_str(), 0644) != 0)
    throw std::runtime_error("chown/chmod " + path);
  return path;
}

}  // namespace capsa::adversarial
