#include "runtime/instance_support.hpp"

#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/run_support.hpp"

namespace capsa::instance_testing {

std::string make_instance_image(const test::TempDir& dir, const std::string& name) {
  return runtime::testing::make_image(dir, name,
                                      {{"/.singularity.d/startscript",
                                        "#!/bin/sh\necho \"$APPTAINER_INSTANCE\" > /tmp/instance-name\n"
                                        // Written whole in one rename: a reader never sees the file empty.
                                        "echo \"started $*\" > /tmp/.started && mv /tmp/.started /tmp/started\necho "
                                        "to-stdout\necho to-stderr >&2\nexec sleep 1000\n",
                                        0755},
                                       {"/.singularity.d/runscript",
                                        "#!/bin/sh\necho \"ran $*\" > /tmp/.ran && mv /tmp/.ran /tmp/ran\nif [ \"$1\" "
                                        "= serve ]; then exec sleep 1000; fi\n",
                                        0755}});
}

test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return runtime::testing::capsa(args, env);
}

std::string unique_name(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

namespace {

std::string base() {
  passwd* pw = ::getpwuid(::getuid());
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string user = pw ? pw->pw_name : std::to_string(::getuid());
  return std::string(::getuid() == 0 ? "/var/lib/capsa/instances" : std::string(pw->pw_dir) + "/.capsa/instances") +
         "|" + host + "/" + user;
}

}  // namespace

std::string record_directory() {
  std::string b = base();
  return b.substr(0, b.find('|')) + "/app/" + b.substr(b.find('|') + 1);
}

std::string log_directory() {
  std::string b = base();
  return b.substr(0, b.find('|')) + "/logs/" + b.substr(b.find('|') + 1);
}

bool process_alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

int processes_naming(const std::string& text) {
  auto result = test::run_process({"ps", "-e", "-o", "args="});
  std::istringstream lines(result.out);
  int count = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find(text) != std::string::npos && line.find("ps -e -o") == std::string::npos) ++count;
  return count;
}

StopOnExit::~StopOnExit() { capsa({"instance", "stop", "--force", pattern_}); }

}  // namespace capsa::instance_testing
