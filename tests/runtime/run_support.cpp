#include "runtime/run_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/test_env.hpp"

namespace capsa::runtime::testing {

std::string busybox_sif() { return test::sif_fixture("real/busybox_amd64.sif"); }

std::string test_binary_directory() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().string();
}

test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env,
                          const std::string& stdin_data, const std::string& cwd) {
  std::vector<std::string> argv;
  if (!cwd.empty()) argv = {"sh", "-c", "cd \"$0\" && exec \"$@\"", cwd};
  argv.push_back("env");
  for (const auto& e : env)  // env(1) takes its options before the assignments
    if (e == "-i") argv.push_back(e);
  for (const auto& e : env)
    if (e.rfind("-u ", 0) == 0) {
      argv.push_back("-u");
      argv.push_back(e.substr(3));
    }
  for (const auto& e : env)
    if (e != "-i" && e.rfind("-u ", 0) != 0) argv.push_back(e);
  // A run from an empty environment keeps the suites' choice about kept images
  // (CapsaTesting.cmake), unless the test sets it itself.
  const char* keep = std::getenv("CAPSA_KEEP_IMAGE_SECONDS");
  const bool cleared = std::find(env.begin(), env.end(), "-i") != env.end();
  const bool own = std::any_of(env.begin(), env.end(),
                               [](const std::string& e) { return e.starts_with("CAPSA_KEEP_IMAGE_SECONDS="); });
  if (cleared && !own && keep != nullptr) argv.push_back(std::string("CAPSA_KEEP_IMAGE_SECONDS=") + keep);
  argv.push_back(test::capsa_binary());
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv, stdin_data, 120);
}

namespace {

void write_entry(const std::filesystem::path& root, const ImageFile& file) {
  std::filesystem::path path = root / file.path.substr(1);
  std::filesystem::create_directories(path.parent_path());
  std::filesystem::remove(path);
  if (file.content.rfind("->", 0) == 0) {
    std::filesystem::create_symlink(file.content.substr(2), path);
    return;
  }
  std::ofstream(path, std::ios::binary) << file.content;
  ::chmod(path.c_str(), file.mode);
}

}  // namespace

std::string make_sandbox(const test::TempDir& dir, const std::string& name, const std::vector<ImageFile>& files) {
  std::filesystem::path root = dir / (name + "-rootfs");
  std::filesystem::create_directories(root / "bin");
  for (const char* d : {"etc", "tmp", "var/tmp", "home", "root", "proc", "sys", "dev", ".singularity.d/env",
                        ".singularity.d/libs", ".singularity.d/actions"})
    std::filesystem::create_directories(root / d);
  ::chmod((root / "tmp").c_str(), 01777);
  std::filesystem::copy_file("/usr/bin/busybox", root / "bin/busybox");
  for (const char* applet : {"sh", "cat", "echo", "env", "id", "ls", "pwd", "printf", "test", "touch", "grep",
                             "sed", "sleep", "stat", "readlink", "wc", "md5sum", "head", "tr", "sort", "kill",
                             "mkdir", "rm", "dd", "od", "ps", "awk", "cut", "whoami", "true", "false", "mount"})
    std::filesystem::create_symlink("busybox", root / "bin" / applet);
  write_entry(root, {"/etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"});
  write_entry(root, {"/etc/group", "root:x:0:\nnogroup:x:65534:\n"});
  for (const auto& file : files) write_entry(root, file);
  return root.string();
}

std::string make_image(const test::TempDir& dir, const std::string& name, const std::vector<ImageFile>& files) {
  std::filesystem::path root = make_sandbox(dir, name, files);
  std::string squashfs = dir / (name + ".squashfs");
  std::string sif = dir / (name + ".sif");
  auto packed = test::run_process({"gensquashfs", "--pack-dir", root.string(), "--all-root", "--quiet", "--force",
                                   "-c", "gzip", squashfs});
  EXPECT_EQ(packed.exit_code, 0) << packed.err;
  std::filesystem::remove(sif);
  auto created = test::run_process({"siftool", "new", sif});
  EXPECT_EQ(created.exit_code, 0) << created.err;
  auto added = test::run_process({"siftool", "add", "--datatype", "4", "--partfs", "1", "--parttype", "2",
                                  "--partarch", "2", "--groupid", "1", sif, squashfs});
  EXPECT_EQ(added.exit_code, 0) << added.err;
  std::filesystem::remove_all(root);
  std::filesystem::remove(squashfs);
  return sif;
}

HomeDir::HomeDir() {
  passwd* pw = ::getpwuid(::getuid());
  std::string home = pw != nullptr ? pw->pw_dir : "/tmp";
  char templ[PATH_MAX];
  std::snprintf(templ, sizeof templ, "%s/.capsa-test-home-XXXXXX", home.c_str());
  if (::mkdtemp(templ) == nullptr) ADD_FAILURE() << "cannot create a folder in " << home;
  path_ = templ;
  std::ofstream(path_ + "/marker") << "host home\n";
}

HomeDir::~HomeDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string own_namespace(const std::string& name) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(("/proc/self/ns/" + name).c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
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

// Mounts a test makes on the host itself (source named capsa-test-*, as in
// Launch.UnprivilegedBindsWorkWithHostMountsBelowTheSource) are left out: the root and user
// runs of a suite run at once, and one's own mount is not the other's leak.
std::string mount_table() {
  std::istringstream all(test::read_file("/proc/self/mountinfo"));
  std::string kept;
  for (std::string line; std::getline(all, line);) {
    std::size_t fields_end = line.find(" - ");
    std::size_t source = fields_end == std::string::npos ? fields_end : line.find(' ', fields_end + 3);
    if (source != std::string::npos && line.compare(source + 1, 11, "capsa-test-") == 0) continue;
    kept += line + "\n";
  }
  return kept;
}

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
    if (line.find(image) != std::string::npos) ++live;
  return live;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);)
    if (l == line) return true;
  return false;
}

pid_t start_waiting_container(const std::string& conf, const std::string& image, const std::string& sync,
                              const std::string& name) {
  const std::string ready = name.empty() ? "/sync/ready" : "/sync/ready." + name;
  const std::string script = "touch " + ready + "; while [ ! -e /sync/go ]; do sleep 0.1; done";
  const std::string binary = test::capsa_binary();
  const std::string bind = sync + ":/sync";
  pid_t pid = ::fork();
  if (pid == 0) {
    int null_fd = ::open("/dev/null", O_RDWR);
    ::dup2(null_fd, STDOUT_FILENO);
    ::execl(binary.c_str(), binary.c_str(), "-c", conf.c_str(), "exec", "-B", bind.c_str(), image.c_str(), "sh", "-c",
            script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

}  // namespace capsa::runtime::testing
