// capsa-spank-task: what a task of a step with --container-image executes in place of its
// own command (plugin.cpp replaces the first word of the task's argv, an array Slurm owns
// and that cannot grow). It puts the command back together, `capsa exec ...
// instance://spank-JOB.STEP` (CAPSA_SPANK_EXEC) + the original first word
// (CAPSA_SPANK_ARGV0) + the rest of its own argv, removes both variables, and executes
// it: the task's environment (Slurm's, PMIx's or PMI-2's) is passed on untouched.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "spank/container_request.hpp"

int main(int argc, char** argv) {
  const char* exec = std::getenv("CAPSA_SPANK_EXEC");
  const char* argv0 = std::getenv("CAPSA_SPANK_ARGV0");
  if (exec == nullptr || argv0 == nullptr) {
    std::fprintf(stderr, "capsa-spank-task: error: run by capsa's SPANK plugin only (docs/slurm-plugin.md)\n");
    return 127;
  }
  const std::vector<std::string> rest(argv + (argc > 0 ? 1 : 0), argv + argc);
  std::vector<std::string> words = capsa::spank::task_argv(capsa::spank::decode_words(exec), argv0, rest);
  ::unsetenv("CAPSA_SPANK_EXEC");
  ::unsetenv("CAPSA_SPANK_ARGV0");
  std::vector<char*> array;
  array.reserve(words.size() + 1);
  for (auto& word : words) array.push_back(word.data());
  array.push_back(nullptr);
  ::execv(array[0], array.data());
  std::perror(("capsa-spank-task: error: cannot run " + words[0]).c_str());
  return 127;
}
