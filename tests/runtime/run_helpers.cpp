#include "run_helpers.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "support/test_env.hpp"

namespace capsa::runtime::testing {

std::string busybox_sif() { return test::sif_fixture("real/busybox_amd64.sif"); }

test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> argv = {"env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(test::capsa_binary());
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv, "", 120);
}

std::string make_busybox_sandbox(const test::TempDir& dir, const std::string& name) {
  std::string root = dir / name;
  const char* home = std::getenv("HOME");
  std::string script =
      "set -e; r=\"$1\"; mkdir -p \"$r\"/bin \"$r\"/proc \"$r\"/sys \"$r\"/dev \"$r\"/tmp \"$r\"/var/tmp \"$r\"/etc "
      "\"$r\"/root \"$r/$2\"; cp /bin/busybox \"$r\"/bin/busybox; "
      "for a in sh cat echo touch ls id mkdir rm test true env grep awk wc stat sleep pwd mount; do "
      "ln -s busybox \"$r\"/bin/$a; done; "
      "echo 'root:x:0:0:root:/root:/bin/sh' > \"$r\"/etc/passwd; echo 'root:x:0:' > \"$r\"/etc/group; "
      "touch \"$r\"/etc/hosts \"$r\"/etc/resolv.conf";
  auto made = test::run_process({"sh", "-c", script, "sh", root, home ? home : "/root"});
  if (made.exit_code != 0) throw std::runtime_error("making the sandbox: " + made.err);
  return root;
}

std::string mount_table() { return test::read_file("/proc/self/mountinfo"); }

int loop_devices_for(const std::string& image) {
  int count = 0;
  DIR* dir = ::opendir("/sys/block");
  if (dir == nullptr) return 0;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.rfind("loop", 0) != 0) continue;
    std::string backing;
    try {
      backing = test::read_file("/sys/block/" + name + "/loop/backing_file");
    } catch (...) {
      continue;  // not attached
    }
    if (!backing.empty() && backing.back() == '\n') backing.pop_back();
    if (backing == image) ++count;
  }
  ::closedir(dir);
  return count;
}

int fuse_servers_for(const std::string& image) {
  auto result = test::run_process({"ps", "-o", "args=", "-u", std::to_string(::getuid())});
  std::istringstream lines(result.out);
  int live = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find("squashfuse_ll") != std::string::npos && line.find(image) != std::string::npos) ++live;
  return live;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);)
    if (l == line) return true;
  return false;
}

}  // namespace capsa::runtime::testing
