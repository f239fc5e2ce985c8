// Hostile images, end to end: each test builds one image with tests/hostile/hostile_image.py
// (exact control over every tar entry and every manifest field), pushes it to the plain test
// registry, runs `capsa pull` on it and, when it gets that far, `capsa exec`. Each asserts
// the exact outcome (the error, or the warning and what the image holds instead), and that
// nothing outside was read or written: a canary directory on the host that the image aims
// at keeps its one file, content and mtime; host file contents never appear in the image;
// the output directory and the cache hold nothing unexpected.
// Runs as root and as the unprivileged test user (hostile.root, hostile.user).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>

#include "image/metadata.hpp"
#include "registry/testbed.hpp"
#include "sif/image.hpp"
#include "squashfs/reader.hpp"
#include "support/cache_check.hpp"
#include "support/leaks.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"
#include "util/error.hpp"

namespace capsa::hostile {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ProcessResult;
using test::run_process;

// Enough "../" to climb from any working directory to /.
const std::string kClimb = [] {
  std::string up;
  for (int i = 0; i < 32; ++i) up += "../";
  return up;
}();

std::string random_word() {
  std::random_device device;
  std::mt19937_64 generator(device());
  return std::to_string(generator());
}

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) names.insert(entry.path().filename().string());
  return names;
}

// A host directory the images aim at, holding one file with unique content and a known
// mtime. untouched() proves nothing was created, removed, written or replaced there.
class Canary {
 public:
  explicit Canary(const std::string& dir) : dir_(dir), content_("host canary " + random_word() + "\n") {
    fs::create_directories(dir_);
    std::ofstream(file()) << content_;
    timespec times[2] = {{1600000000, 0}, {1600000000, 0}};
    ::utimensat(AT_FDCWD, file().c_str(), times, 0);
    ::utimensat(AT_FDCWD, dir_.c_str(), times, 0);
  }
  const std::string& dir() const { return dir_; }
  std::string file() const { return dir_ + "/canary"; }
  const std::string& content() const { return content_; }
  void expect_untouched() const {
    EXPECT_EQ(names_in(dir_), std::set<std::string>{"canary"}) << "something was created or removed in " << dir_;
    EXPECT_EQ(test::read_file(file()), content_);
    struct stat st {};
    ASSERT_EQ(::stat(file().c_str(), &st), 0);
    EXPECT_EQ(st.st_mtim.tv_sec, 1600000000) << "the canary was written";
    ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mtim.tv_sec, 1600000000) << "the canary's directory was modified";
  }

 private:
  std::string dir_;
  std::string content_;
};

// Every regular file of an image (symlinks followed inside the image), path -> content.
void collect_files(const squashfs::Reader& reader, const std::string& dir, int depth,
                   std::map<std::string, std::string>& files) {
  auto names = reader.list_directory(dir);
  if (!names) return;
  for (const std::string& name : *names) {
    const std::string path = (dir == "/" ? "" : dir) + "/" + name;
    try {
      if (auto content = reader.read_file(path, 64 << 20)) files[path] = *content;
      else if (depth > 0) collect_files(reader, path, depth - 1, files);
    } catch (const FormatError&) {
      // a symlink loop or a dangling link: not a file
    }
  }
}

class Hostile : public ::testing::Test {
 protected:
  test::TempDir work;
  std::string cache = work / "cache";
  std::string outdir = work / "out";
  std::string out = outdir + "/image.sif";
  Canary canary{work / "host"};

  void SetUp() override {
    if (test::test_registry().plain.empty()) GTEST_SKIP() << "no test registry";
    fs::create_directories(outdir);
  }

  // Pushes the image `spec` describes as hostile-<uid>/<test name>:latest (root and the test
  // user may run at once) and returns what hostile_image.py printed.
  json push(const json& spec) {
    repository_ = "hostile-" + std::to_string(::getuid()) + "/" +
                  lowercase(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ProcessResult pushed = run_process({"python3", std::string(CAPSA_HOSTILE_TEST_DIR) + "/hostile_image.py",
                                        test::test_registry().plain, repository_, "latest"},
                                       spec.dump(), 300);
    EXPECT_EQ(pushed.exit_code, 0) << pushed.err;
    return pushed.exit_code == 0 ? json::parse(pushed.out) : json();
  }
  std::string reference(const std::string& registry) const {
    return "docker://" + registry + "/" + repository_ + ":latest";
  }
  ProcessResult pull(std::vector<std::string> env = {}, const std::string& registry = "") {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + cache};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {test::capsa_binary(), "pull", "--nohttps", out,
                             reference(registry.empty() ? test::test_registry().plain : registry)});
    ProcessResult result = run_process(argv, "", 300);
    auto at = result.err.find("capsa: error: ");
    last_error_ = at == std::string::npos ? "" : result.err.substr(at, result.err.find('\n', at) - at);
    return result;
  }
  // `capsa exec --containall`: no host directory (/tmp, $HOME, the working directory) is
  // bound in, so what the process sees of the host is what the runtime provides.
  ProcessResult exec(const std::vector<std::string>& command) {
    std::vector<std::string> argv = {test::capsa_binary(), "exec", "--containall", out};
    argv.insert(argv.end(), command.begin(), command.end());
    return run_process(argv, "", 120);
  }
  std::map<std::string, std::string> image_files() const {
    sif::Image image = sif::Image::open(out);
    squashfs::Reader root = image::open_primary_squashfs(image);
    std::map<std::string, std::string> files;
    collect_files(root, "/", 64, files);
    return files;
  }
  std::optional<std::vector<std::string>> image_listing(const std::string& dir) const {
    sif::Image image = sif::Image::open(out);
    return image::open_primary_squashfs(image).list_directory(dir);
  }

  // A refused pull leaves no SIF and no temporary in the output directory, and the cache
  // holds only whole blobs whose bytes match their names, no partial over `max_partial`
  // bytes, no SIF and no scratch.
  void expect_refused_cleanly(std::uint64_t max_partial = 0) const {
    if (!last_error_.empty()) std::cout << "refused with: " << last_error_ << "\n";
    EXPECT_EQ(names_in(outdir), std::set<std::string>{}) << "a partial SIF or temporary was left";
    expect_cache_consistent(max_partial);
    for (const auto& name : names_in(cache + "/sif"))
      EXPECT_TRUE(name.ends_with(".lock")) << "cache/sif/" << name << " after a refused pull";
  }
  void expect_cache_consistent(std::uint64_t max_partial = 0) const {
    test::CacheCheck check = test::check_cache(cache);
    EXPECT_EQ(test::joined(check.problems), "") << "the cache is not consistent";
    EXPECT_EQ(test::joined(check.stale_temporaries), "") << "scratch left in the cache";
    // A partial download may stay to be resumed, but only as much as it was allowed.
    for (const auto& partial : check.partials) EXPECT_LE(fs::file_size(cache + "/" + partial), max_partial) << partial;
  }
  // Host files whose contents must never end up in an image.
  void expect_no_host_content() const {
    for (const auto& [path, content] : image_files()) {
      EXPECT_EQ(content.find(canary.content()), std::string::npos) << path << " holds the host canary";
      EXPECT_EQ(content.find("root:"), std::string::npos) << path << " looks like a host /etc/passwd or shadow";
    }
  }

  std::string repository_;
  std::string last_error_;  // the `capsa: error:` line of the last pull

 private:
  static std::string lowercase(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  }
};

json file(const std::string& name, const std::string& data, int mode = 0644) {
  return {{"name", name}, {"type", "file"}, {"data", data}, {"mode", mode}};
}
json link(const std::string& type, const std::string& name, const std::string& target) {
  return {{"name", name}, {"type", type}, {"target", target}};
}
// One layer holding one file of `bytes` zeros (hostile_image.py's zeros_bomb).
json zeros_bomb(const std::string& name, std::uint64_t bytes, std::optional<std::uint64_t> truncate_after = {}) {
  json bomb = {{"name", name}, {"bytes", bytes}};
  if (truncate_after) bomb["truncate_after"] = *truncate_after;
  json layer = json::object();
  layer["zeros_bomb"] = bomb;
  json spec = json::object();
  spec["layers"] = json::array({layer});
  return spec;
}
json image_of(std::vector<json> layers) {
  json spec = {{"layers", json::array()}};
  for (auto& entries : layers) spec["layers"].push_back({{"entries", entries}});
  return spec;
}

TEST_F(Hostile, PathTraversalEntriesAreSkippedOrKeptInsideTheImage) {
  push(image_of({json::array({
      file("ok", "inside\n"),
      json{{"name", "bin/busybox"}, {"type", "file"}, {"source", "/bin/busybox"}, {"mode", 0755}},
      file(kClimb + canary.dir().substr(1) + "/pwned-dotdot", "escaped\n"),
      file("a/../../pwned-middle", "escaped\n"),
      file(canary.dir() + "/pwned-absolute", "absolute\n"),
      link("symlink", "../pwned-symlink", "/etc/passwd"),
      {{"name", kClimb + canary.dir().substr(1) + "/pwned-dir"}, {"type", "dir"}},
  })}));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  // Each ".." entry is named and dropped; an absolute name is normalised into the image.
  for (const char* dropped : {"/pwned-dotdot: path contains a \"..\" component; skipped",
                              "a/../../pwned-middle: path contains a \"..\" component; skipped",
                              "../pwned-symlink: path contains a \"..\" component; skipped",
                              "/pwned-dir/: path contains a \"..\" component; skipped"})
    EXPECT_NE(pulled.err.find(dropped), std::string::npos) << "no warning \"" << dropped << "\" in\n" << pulled.err;
  auto files = image_files();
  EXPECT_EQ(files["/ok"], "inside\n");
  EXPECT_EQ(files[canary.dir() + "/pwned-absolute"], "absolute\n") << "the absolute name belongs inside the image";
  for (const auto& [path, content] : files) EXPECT_NE(content, "escaped\n") << path;
  EXPECT_EQ(names_in(outdir), std::set<std::string>{"image.sif"});
  canary.expect_untouched();
  ProcessResult run = exec({"/bin/busybox", "cat", "/ok"});
  EXPECT_EQ(run.out, "inside\n") << run.err;
  canary.expect_untouched();
}

TEST_F(Hostile, SymlinkPointingOutsideNeverRedirectsAFileWrittenThroughIt) {
  const std::string busybox = "/bin/busybox";
  push(image_of({
      json::array({json{{"name", "bin/busybox"}, {"type", "file"}, {"source", busybox}, {"mode", 0755}},
                   link("symlink", "escape", canary.dir()), link("symlink", "relative", kClimb + canary.dir().substr(1)),
                   link("symlink", "run-link", canary.dir()),
                   // the same layer: the file after the symlink
                   file("escape/pwned-same-layer", "through a symlink\n")}),
      // an upper layer writing through the lower layer's symlinks
      json::array({file("relative/pwned-upper-layer", "through a symlink\n")}),
  }));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_NE(pulled.err.find("escape/pwned-same-layer: /escape is a symlink earlier in the same layer; replaced by a "
                            "directory"),
            std::string::npos)
      << pulled.err;
  auto files = image_files();
  EXPECT_EQ(files["/escape/pwned-same-layer"], "through a symlink\n") << "the file stays inside the image";
  EXPECT_EQ(files["/relative/pwned-upper-layer"], "through a symlink\n");
  EXPECT_EQ(image_listing("/relative"), std::vector<std::string>{"pwned-upper-layer"})
      << "the upper layer's path replaced the symlink by a directory of the image";
  canary.expect_untouched();
  // At run time the symlink left in the image resolves inside the container, where the
  // host directory does not exist, and the image itself is read-only.
  ProcessResult write = exec({"/bin/busybox", "sh", "-c", "echo run > /run-link/pwned-at-run"});
  EXPECT_NE(write.exit_code, 0) << write.out;
  ProcessResult write_image = exec({"/bin/busybox", "sh", "-c", "echo run > /escape/pwned-at-run"});
  EXPECT_NE(write_image.exit_code, 0);
  EXPECT_NE(write_image.err.find("Read-only file system"), std::string::npos) << write_image.err;
  canary.expect_untouched();
}

TEST_F(Hostile, HardlinkToAHostFileIsDropped) {
  push(image_of({json::array({
      file("etc/hostname", "image\n"),
      link("hardlink", "shadow", "/etc/shadow"),
      link("hardlink", "passwd", "../../../../../etc/passwd"),
      link("hardlink", "canary-absolute", canary.file()),
      link("hardlink", "canary-climb", kClimb + canary.file().substr(1)),
      link("hardlink", "hostname-link", "etc/hostname"),  // a legitimate one, for contrast
  })}));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  for (const std::string& warning :
       {std::string("hardlink /shadow -> /etc/shadow: target missing, deleted by a later layer, or a directory; skipped"),
        "hardlink /canary-absolute -> " + canary.file() + ": target missing",
        std::string("passwd: hardlink target ../../../../../etc/passwd: path contains a \"..\" component; skipped"),
        std::string("canary-climb: hardlink target ") + kClimb})
    EXPECT_NE(pulled.err.find(warning), std::string::npos) << "no warning \"" << warning << "\" in\n" << pulled.err;
  auto files = image_files();
  EXPECT_EQ(files.count("/shadow") + files.count("/passwd") + files.count("/canary-absolute") +
                files.count("/canary-climb"),
            0u);
  EXPECT_EQ(files["/hostname-link"], "image\n");
  expect_no_host_content();
  canary.expect_untouched();
}

TEST_F(Hostile, WhiteoutAimedOutsideTheRootRemovesNothingOutside) {
  push(image_of({
      json::array({file("victim", "lower\n"), file("keep", "lower\n")}),
      json::array({json{{"name", "../.wh.canary"}, {"type", "file"}},
                   json{{"name", kClimb + canary.dir().substr(1) + "/.wh.canary"}, {"type", "file"}},
                   json{{"name", canary.dir() + "/.wh.canary"}, {"type", "file"}},
                   json{{"name", "../.wh..wh..opq"}, {"type", "file"}},
                   json{{"name", ".wh.victim"}, {"type", "file"}}}),
  }));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_NE(pulled.err.find("../.wh.canary: path contains a \"..\" component; skipped"), std::string::npos)
      << pulled.err;
  EXPECT_NE(pulled.err.find(canary.dir().substr(1) + "/.wh.canary: path contains a \"..\" component; skipped"),
            std::string::npos)
      << pulled.err;
  auto files = image_files();
  EXPECT_EQ(files.count("/victim"), 0u) << "the legitimate whiteout applies";
  EXPECT_EQ(files["/keep"], "lower\n") << "the opaque marker outside the root applied to nothing";
  for (const auto& [path, content] : files) EXPECT_EQ(path.find(".wh."), std::string::npos) << path;
  canary.expect_untouched();
}

TEST_F(Hostile, DeviceNodesAreSkipped) {
  push(image_of({json::array({
      json{{"name", "dev/evil-mem"}, {"type", "char"}, {"major", 1}, {"minor", 1}, {"mode", 0666}},
      json{{"name", "evil-sda"}, {"type", "block"}, {"major", 8}, {"minor", 0}, {"mode", 0666}},
      json{{"name", "dev/null"}, {"type", "char"}, {"major", 1}, {"minor", 3}, {"mode", 0666}},
      json{{"name", "fifo"}, {"type", "fifo"}},
      json{{"name", "bin/busybox"}, {"type", "file"}, {"source", "/bin/busybox"}, {"mode", 0755}},
  })}));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  for (const char* name : {"dev/evil-mem", "evil-sda", "dev/null"})
    EXPECT_NE(pulled.err.find(std::string(name) + ": device node skipped (the runtime provides /dev)"),
              std::string::npos)
        << pulled.err;
  auto top = image_listing("/");
  ASSERT_TRUE(top);
  EXPECT_EQ(std::count(top->begin(), top->end(), "evil-sda"), 0);
  EXPECT_EQ(std::count(top->begin(), top->end(), "fifo"), 1) << "a FIFO is kept";
  auto dev = image_listing("/dev");
  ASSERT_TRUE(dev);
  EXPECT_EQ(std::count(dev->begin(), dev->end(), "evil-mem"), 0);
  // Inside, /dev is the runtime's: no /dev/evil-mem, and /dev/null is the real one.
  ProcessResult run = exec({"/bin/busybox", "sh", "-c", "ls /dev/evil-mem /evil-sda; echo x > /dev/null && echo ok"});
  EXPECT_EQ(run.out, "ok\n") << run.err;
  EXPECT_NE(run.err.find("/dev/evil-mem"), std::string::npos) << run.err;
}

TEST_F(Hostile, SetuidRootBinaryNeverGainsPrivileges) {
  push(image_of({json::array({
      json{{"name", "bin/busybox"}, {"type", "file"}, {"source", "/bin/busybox"}, {"mode", 04755}, {"uid", 0}},
      // busybox picks its applet from argv[0]: the setgid copy keeps the name
      json{{"name", "sgid/busybox"}, {"type", "file"}, {"source", "/bin/busybox"}, {"mode", 02755}, {"gid", 0}},
      json{{"name", "root-only"}, {"type", "file"}, {"data", "image secret\n"}, {"mode", 0400}, {"uid", 0}},
  })}));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  const std::string uid = std::to_string(::geteuid()), gid = std::to_string(::getegid());
  // The mode bits are kept in the image (as Apptainer keeps them)...
  ProcessResult mode = exec({"/bin/busybox", "stat", "-c", "%a %u", "/bin/busybox"});
  EXPECT_EQ(mode.out, "4755 " + std::string(::geteuid() == 0 ? "0" : "65534") + "\n") << mode.err;
  // ...but the image is mounted nosuid in a user namespace with no_new_privs: the
  // process keeps the caller's effective ids.
  ProcessResult id = exec({"/bin/busybox", "id", "-u"});
  EXPECT_EQ(id.out, uid + "\n") << id.err;
  ProcessResult gid_run = exec({"/sgid/busybox", "id", "-g"});
  EXPECT_EQ(gid_run.out, gid + "\n") << gid_run.err;
  ProcessResult status = exec({"/bin/busybox", "grep", "-E", "^(NoNewPrivs|CapEff)", "/proc/self/status"});
  EXPECT_NE(status.out.find("NoNewPrivs:\t1"), std::string::npos) << status.out;
  ProcessResult mounts = exec({"/bin/busybox", "awk", "$5 == \"/\" { print $6 }", "/proc/self/mountinfo"});
  EXPECT_NE(mounts.out.find("nosuid"), std::string::npos) << "the image root is not nosuid: " << mounts.out;
  ProcessResult secret = exec({"/bin/busybox", "cat", "/root-only"});
  if (::geteuid() == 0) {
    EXPECT_EQ(secret.out, "image secret\n");  // root is root inside too
  } else {
    EXPECT_NE(secret.exit_code, 0);
    EXPECT_EQ(secret.out, "");
    EXPECT_NE(secret.err.find("Permission denied"), std::string::npos) << secret.err;
  }
}

TEST_F(Hostile, LayerBytesThatDoNotMatchTheirDigestAreRejected) {
  json pushed = push(image_of({json::array({file("a", std::string(200000, 'x'))})}));
  test::FaultProxy proxy(test::test_registry().plain);
  const std::string layer = pushed["layers"][0]["digest"];
  proxy.configure({{"corrupt", {{"count", 1000}, {"path", layer}}}});  // one byte flipped, every time
  ProcessResult pulled = pull({}, proxy.front());
  EXPECT_NE(pulled.exit_code, 0);
  EXPECT_NE(pulled.err.find("capsa: error: "), std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find("does not match"), std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find(layer.substr(7, 12)), std::string::npos) << "the error names the blob: " << pulled.err;
  expect_refused_cleanly(200000);
  canary.expect_untouched();
}

TEST_F(Hostile, LayerThatDoesNotMatchTheConfigsDiffIdIsRejected) {
  json spec = image_of({json::array({file("a", "real\n")})});
  spec["wrong_diff_id"] = 0;
  push(spec);
  ProcessResult pulled = pull();
  EXPECT_NE(pulled.exit_code, 0);
  EXPECT_NE(pulled.err.find("but the image config says sha256:0000000000000000000000000000000000000000000000000000000000"
                            "000000 (corrupt or substituted layer)"),
            std::string::npos)
      << pulled.err;
  expect_refused_cleanly();
}

TEST_F(Hostile, ManifestNamingAMissingBlobIsRejected) {
  json spec = image_of({json::array({file("a", "gone " + random_word())})});
  spec["delete_layer"] = 0;
  json pushed = push(spec);
  ProcessResult pulled = pull();
  EXPECT_NE(pulled.exit_code, 0);
  const std::string layer = pushed["layers"][0]["digest"];
  EXPECT_NE(pulled.err.find("capsa: error: "), std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find(layer), std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find("404"), std::string::npos) << pulled.err;
  // The config may have been downloading when the layer failed: resumable, never over its size.
  expect_refused_cleanly(pushed["config"]["size"].get<std::uint64_t>());
}

TEST_F(Hostile, BlobLargerThanTheManifestClaimsIsCutOff) {
  // 8 MiB that gzip cannot shrink, claimed as 1 KiB.
  json spec = image_of({json::array({json{{"name", "big"}, {"type", "file"}, {"random_bytes", 8 << 20}}})});
  spec["claim_size"] = {{"layer", 0}, {"size", 1024}};
  json pushed = push(spec);
  ASSERT_GT(pushed["layers"][0]["size"].get<std::uint64_t>(), 8u << 20);
  ProcessResult pulled = pull();
  EXPECT_NE(pulled.exit_code, 0);
  EXPECT_NE(pulled.err.find("sent more than the 1024 bytes"), std::string::npos) << pulled.err;
  expect_refused_cleanly(1024);  // never wrote past the claimed size
}

TEST_F(Hostile, BlobSmallerThanTheManifestClaimsIsRejected) {
  json spec = image_of({json::array({file("a", "short " + random_word())})});
  spec["claim_size"] = {{"layer", 0}, {"size", 100000}};
  push(spec);
  ProcessResult pulled = pull();
  EXPECT_NE(pulled.exit_code, 0);
  EXPECT_NE(pulled.err.find("of 100000 bytes"), std::string::npos) << pulled.err;
  expect_refused_cleanly(100000);
}

// A 2 GiB file of zeros in a 2 MiB gzip layer: over a lowered limit it is refused at its
// tar header, before any of its data is decompressed.
TEST_F(Hostile, DecompressionBombOverTheLimitIsRefusedAtItsHeader) {
  push(zeros_bomb("zeros", 2ull << 30));
  ProcessResult pulled = pull({"CAPSA_MAX_UNPACKED_SIZE=1G"});
  EXPECT_NE(pulled.exit_code, 0);
  EXPECT_NE(pulled.err.find("zeros: the image's files add up to more than 1 GiB, the limit for an unpacked image (a "
                            "decompression bomb?); set CAPSA_MAX_UNPACKED_SIZE to allow more"),
            std::string::npos)
      << pulled.err;
  expect_refused_cleanly();
}

// A header that declares a 1 TiB file (the data is not even there) is refused under the
// default limit, from the header alone.
TEST_F(Hostile, HeaderDeclaringATebibyteFileIsRefusedUnderTheDefaultLimit) {
  push(zeros_bomb("huge", 1ull << 40, 4u << 20));
  ProcessResult pulled = pull();
  EXPECT_NE(pulled.exit_code, 0);
  EXPECT_NE(pulled.err.find("huge: the image's files add up to more than 256 GiB"), std::string::npos) << pulled.err;
  expect_refused_cleanly();
}

// Under the limit, the same bomb converts in bounded memory and disk: runs of zeros are
// stored as sparse blocks, so the image is about as small as the layer.
TEST_F(Hostile, DecompressionBombUnderTheLimitTakesBoundedMemoryAndDisk) {
  push(zeros_bomb("zeros", 1ull << 30));
  ProcessResult pulled =
      run_process({"/usr/bin/time", "-f", "peak-rss-kib %M", "env", "CAPSA_CACHEDIR=" + cache, test::capsa_binary(),
                   "pull", "--nohttps", out, reference(test::test_registry().plain)},
                  "", 300);
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  auto rss = pulled.err.find("peak-rss-kib ");
  ASSERT_NE(rss, std::string::npos) << pulled.err;
  const std::uint64_t peak_kib = std::stoull(pulled.err.substr(rss + 13));
  std::cout << "1 GiB bomb: peak RSS " << peak_kib / 1024 << " MiB, SIF " << fs::file_size(out) << " bytes\n";
  EXPECT_LT(peak_kib, 512u << 10) << "peak RSS over 512 MiB";
  EXPECT_LT(fs::file_size(out), 16u << 20) << "1 GiB of zeros should take almost no space";
  sif::Image image = sif::Image::open(out);
  EXPECT_THROW((void)image::open_primary_squashfs(image).read_file("/zeros", 1 << 20), FormatError)
      << "larger than 1 MiB";
}

TEST_F(Hostile, TwoHundredThousandTinyFiles) {
  push(image_of({json::array({json{{"many_files", "many"}, {"count", 200000}, {"per_dir", 1000}}})}));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  sif::Image image = sif::Image::open(out);
  squashfs::Reader root = image::open_primary_squashfs(image);
  auto dirs = root.list_directory("/many");
  ASSERT_TRUE(dirs);
  EXPECT_EQ(dirs->size(), 200u);
  auto last = root.list_directory("/many/199");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->size(), 1000u);
  EXPECT_EQ(root.read_file("/many/199/999"), std::string());
}

TEST_F(Hostile, VeryDeepDirectories) {
  // 1500 levels of "d/": a 3000-byte path, deeper than any kernel path walk needs.
  push(image_of({json::array({json{{"deep_dirs", "deep"}, {"depth", 1500}, {"name", "d"}, {"file", "bottom"}}})}));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  std::string path = "/deep";
  for (int i = 0; i < 1500; ++i) path += "/d";
  sif::Image image = sif::Image::open(out);
  EXPECT_EQ(image::open_primary_squashfs(image).read_file(path + "/bottom"), "deep\n");
  canary.expect_untouched();
}

TEST_F(Hostile, LongNamesAndPaths) {
  const std::string name255(255, 'n'), name256(256, 'o'), name300(300, 'p');
  std::string long_path = "long";  // over PATH_MAX (4096) in 200-byte components
  while (long_path.size() <= 4200) long_path += "/" + std::string(200, 'q');
  push(image_of({json::array({
      file(name255, "255\n"),
      file(name256, "256\n"),
      file(name300, "300\n"),
      file(long_path + "/f", "too long\n"),
      link("symlink", "long-target", std::string(5000, 'r')),
  })}));
  ProcessResult pulled = pull();
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_NE(pulled.err.find(name300.substr(0, 300) + ": name longer than 256 bytes; skipped"), std::string::npos)
      << pulled.err;
  EXPECT_NE(pulled.err.find(": path longer than 4095 bytes; skipped"), std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find("long-target: symlink with an empty or over-long target; skipped"), std::string::npos)
      << pulled.err;
  auto files = image_files();
  EXPECT_EQ(files["/" + name255], "255\n");
  EXPECT_EQ(files["/" + name256], "256\n") << "256 bytes is squashfs's limit, and kept";
  EXPECT_EQ(files.count("/" + name300), 0u);
  for (const auto& [path, content] : files) EXPECT_NE(content, "too long\n") << path;
  canary.expect_untouched();
}

}  // namespace
}  // namespace capsa::hostile
