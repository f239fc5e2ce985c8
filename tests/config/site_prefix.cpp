#include "site_prefix.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/test_env.hpp"

namespace capsa::config::testing {

namespace fs = std::filesystem;

SitePrefix::SitePrefix() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/capsa-site-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  path_ = pattern;
  ::chmod(path_.c_str(), 0755);
  fs::create_directories(path_ + "/bin");
  fs::create_directories(path_ + "/libexec/capsa");
  fs::create_directories(path_ + "/etc/capsa");
  const fs::path built = fs::path(test::capsa_binary()).parent_path();
  fs::copy_file(test::capsa_binary(), path_ + "/bin/capsa");
  fs::copy_file(built / "capsa-full", path_ + "/libexec/capsa/capsa-full");
  // Removed when the test binary exits. Not through get(): the handler is registered while
  // the static SitePrefix is being made, so its destructor runs first ([basic.start.term]),
  // and the prefix (250 MB of binaries) was left behind. This string is made before the
  // handler is registered, and so outlives it.
  static std::string removed_at_exit;
  removed_at_exit = path_;
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(removed_at_exit, ignored);
  });
}

const SitePrefix& SitePrefix::get() {
  static const SitePrefix prefix;
  return prefix;
}

void SitePrefix::write_conf(const std::string& text) const {
  std::ofstream(conf(), std::ios::trunc) << text;
  ::chmod(conf().c_str(), 0644);
}

test::ProcessResult SitePrefix::capsa(const std::vector<std::string>& args, const std::vector<std::string>& env) const {
  std::vector<std::string> argv = {"env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(path_ + "/bin/capsa");
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv);
}

}  // namespace capsa::config::testing
