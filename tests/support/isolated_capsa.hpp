#pragma once
// The command line that runs capsa for a test with a HOME of its own (remote.yaml, the
// keyring, ~/.apptainer) and none of the caller's Apptainer configuration, library or
// keyring variables, so that nothing of the machine's or the developer's leaks in.
#include <string>
#include <vector>

#include "support/test_env.hpp"

namespace capsa::test {

struct IsolatedCapsa {
  std::string home;             // HOME
  std::string cache = "";       // CAPSA_CACHEDIR, unless empty
  std::string directory = "";   // run from here, unless empty
  std::string binary = capsa_binary();
};

std::vector<std::string> isolated_capsa_argv(const IsolatedCapsa& how, const std::vector<std::string>& args);

}  // namespace capsa::test
