#include "support/isolated_capsa.hpp"

namespace capsa::test {

std::vector<std::string> isolated_capsa_argv(const IsolatedCapsa& how, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env"};
  for (const char* name : {"APPTAINER_CONFIGDIR", "SINGULARITY_CONFIGDIR", "APPTAINER_LIBRARY", "SINGULARITY_LIBRARY",
                           "CAPSA_KEYSDIR", "APPTAINER_KEYSDIR", "SINGULARITY_KEYSDIR"})
    argv.insert(argv.end(), {"-u", name});
  argv.push_back("HOME=" + how.home);
  if (!how.cache.empty()) argv.push_back("CAPSA_CACHEDIR=" + how.cache);
  if (!how.directory.empty()) argv.insert(argv.end(), {"sh", "-c", "cd \"$0\" && exec \"$@\"", how.directory});
  argv.push_back(how.binary);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace capsa::test
