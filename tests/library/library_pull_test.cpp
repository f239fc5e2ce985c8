// `pull library://` and `exec library://` against a Library API server (library_server.py,
// started per test on free ports): the record, the 303 to a blob store on another host
// name, concurrent ranged parts, the sha256 check, and each failure the issue names (404,
// a wrong checksum, another architecture, a dropped connection). Root and test user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <algorithm>
#include <random>
#include <sstream>

#include "oci/digest.hpp"
#include "support/background.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::library {
namespace {

namespace fs = std::filesystem;
using test::run_process;

// busybox's SIF with a 12 MiB generic object added: three 5 MiB parts for the client to
// fetch at once, and still an image that runs.
std::string make_big_image(const test::TempDir& work) {
  const std::string sif = work / "bigbox.sif";
  fs::copy_file(test::sif_fixture("real/busybox_amd64.sif"), sif);
  std::string payload(12 << 20, '\0');
  std::mt19937 random(42);
  for (char& c : payload) c = static_cast<char>(random());
  const std::string object = work.write("payload.bin", payload);
  auto added = run_process({test::capsa_binary(), "sif", "add", "--datatype", "7", sif, object});
  if (added.exit_code != 0) ADD_FAILURE() << added.err;
  return sif;
}

std::string sha256_hex_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return oci::Digest::sha256_of(bytes).hex();
}

class LibraryPull : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(work.path().c_str(), 0755);
    image = make_big_image(work);
    hex = sha256_hex_of(image);
    const std::string other_arch = work.write("other-arch.sif", "not this machine's\n");
    // The image is signed (the upstream busybox SIF is); the same without its signature.
    unsigned_image = work / "unsigned.sif";
    fs::copy_file(image, unsigned_image);
    auto unsign = run_process({test::capsa_binary(), "sif", "del", "5", unsigned_image});
    ASSERT_EQ(unsign.exit_code, 0) << unsign.err;
    work.write("catalog.json", "[" + entry("capsa/tests/bigbox:1.0", image, "normal") + "," +
                                   entry("library/default/bigbox:latest", image, "normal") + "," +
                                   entry("capsa/tests/bigbox:sha256." + hex, image, "normal") + "," +
                                   entry("capsa/tests/direct:1.0", image, "direct") + "," +
                                   entry("capsa/tests/badsum:1.0", image, "badsum") + "," +
                                   entry("capsa/tests/flaky:1.0", image, "drop") + "," +
                                   entry("capsa/tests/oldlib:1.0", other_arch, "wrongarch", "arm64") + "," +
                                   entry("capsa/tests/armonly:1.0", other_arch, "normal", "arm64") + "," +
                                   entry("capsa/tests/unsigned:1.0", unsigned_image, "normal") + "]");
    server = std::make_unique<test::Background>(
        std::vector<std::string>{std::string(CAPSA_SOURCE_DIR) + "/tests/library/library_server.py", work / "catalog.json",
                                 work / "ports"},
        work / "server.err");
    ASSERT_TRUE(test::eventually([&] { return fs::exists(work / "ports"); }, 30))
        << "the library server did not start: " << test::read_file(work / "server.err");
    std::ifstream ports(work / "ports");
    int library_port = 0;
    ports >> library_port;
    library = "http://127.0.0.1:" + std::to_string(library_port);
    fs::create_directories(work / "out");
  }

  static std::string entry(const std::string& path, const std::string& file, const std::string& mode,
                           const std::string& arch = "amd64") {
    return R"({"path": ")" + path + R"(", "file": ")" + file + R"(", "mode": ")" + mode + R"(", "arch": ")" + arch +
           R"("})";
  }

  // capsa with a private cache, in the output folder.
  test::ProcessResult capsa(std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + (work / "cache")};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {"sh", "-c", "cd \"$0\" && exec \"$@\"", work / "out", test::capsa_binary()});
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, "", 300);
  }

  // The files a failed pull may not leave: no output, no cache entry, nothing partial
  // (an entry's .lock file stays, as for every cache entry).
  void expect_nothing_written(const std::string& output) {
    EXPECT_FALSE(fs::exists(work / ("out/" + output))) << output;
    if (fs::exists(work / "cache/blobs/sha256"))
      for (const auto& file : fs::directory_iterator(work / "cache/blobs/sha256"))
        if (file.path().extension() != ".lock") ADD_FAILURE() << "left in the cache: " << file.path();
  }

  test::TempDir work;
  std::unique_ptr<test::Background> server;
  std::string image, hex, library, unsigned_image;
};

TEST_F(LibraryPull, PullsInPartsThroughTheRedirectAndRuns) {
  auto pulled = capsa({"pull", "--library", library, "library://capsa/tests/bigbox:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  ASSERT_TRUE(fs::exists(work / "out/bigbox_1.0.sif")) << "Apptainer's default name, CONTAINER_TAG.sif";
  EXPECT_EQ(sha256_hex_of(work / "out/bigbox_1.0.sif"), hex);
  EXPECT_TRUE(fs::exists(work / ("cache/blobs/sha256/" + hex))) << "cached by its sha256";
  auto ran = capsa({"exec", "bigbox_1.0.sif", "busybox", "echo", "from the library"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "from the library\n");
}

// Apptainer warns about an unsigned library image, unless -U (or its old name, or its
// variable) says not to; a signed one pulls without a word.
TEST_F(LibraryPull, AnUnsignedImageIsWarnedAboutUnlessAllowed) {
  const std::string warning = "unsigned_1.0.sif is not signed: nobody vouches for its contents (-U hides this warning)";
  auto unsigned_pull = capsa({"pull", "--library", library, "library://capsa/tests/unsigned:1.0"});
  ASSERT_EQ(unsigned_pull.exit_code, 0) << unsigned_pull.err;
  EXPECT_NE(unsigned_pull.err.find(warning), std::string::npos) << unsigned_pull.err;
  for (const auto& [flag, env] : std::vector<std::pair<std::string, std::string>>{
           {"-U", ""}, {"--allow-unsigned", ""}, {"--allow-unauthenticated", ""}, {"", "APPTAINER_ALLOW_UNSIGNED=1"}}) {
    std::vector<std::string> args = {"pull", "--force", "--library", library};
    if (!flag.empty()) args.push_back(flag);
    args.emplace_back("library://capsa/tests/unsigned:1.0");
    auto allowed = capsa(args, env.empty() ? std::vector<std::string>{} : std::vector<std::string>{env});
    ASSERT_EQ(allowed.exit_code, 0) << allowed.err;
    EXPECT_EQ(allowed.err.find("is not signed"), std::string::npos) << flag << env << ": " << allowed.err;
  }
  auto signed_pull = capsa({"pull", "--library", library, "library://capsa/tests/bigbox:1.0"});
  ASSERT_EQ(signed_pull.exit_code, 0) << signed_pull.err;
  EXPECT_EQ(signed_pull.err.find("is not signed"), std::string::npos) << signed_pull.err;
}

// --tmpdir: where --disable-cache's private cache goes; a directory that cannot take it
// is refused before anything is downloaded.
TEST_F(LibraryPull, TmpdirTakesTheTemporaryFiles) {
  fs::create_directories(work / "tmp");
  ::chmod((work / "tmp").c_str(), 0777);
  auto pulled = capsa(
      {"pull", "--disable-cache", "--tmpdir", work / "tmp", "--library", library, "library://capsa/tests/bigbox:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(sha256_hex_of(work / "out/bigbox_1.0.sif"), hex);
  EXPECT_TRUE(fs::is_empty(work / "tmp")) << "its temporary directory is removed";
  EXPECT_FALSE(fs::exists(work / "cache/blobs")) << "and the cache is untouched";
  auto refused = capsa({"pull", "--tmpdir", work / "no-such-dir", "--library", library, "again.sif",
                        "library://capsa/tests/bigbox:1.0"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("--tmpdir " + (work / "no-such-dir") + ": not a directory this user can write to"),
            std::string::npos)
      << refused.err;
}

TEST_F(LibraryPull, ShortFormsTheEnvironmentsLibraryAndADigest) {
  auto short_form = capsa({"pull", "library://bigbox"}, {"APPTAINER_LIBRARY=" + library});
  ASSERT_EQ(short_form.exit_code, 0) << short_form.err;
  EXPECT_EQ(sha256_hex_of(work / "out/bigbox_latest.sif"), hex);

  auto pinned = capsa({"pull", "--library", library, "pinned.sif", "library://capsa/tests/bigbox@sha256:" + hex});
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_EQ(sha256_hex_of(work / "out/pinned.sif"), hex);

  auto direct = capsa({"pull", "--library", library, "library://capsa/tests/direct:1.0"}, {});
  ASSERT_EQ(direct.exit_code, 0) << direct.err << " (a library that serves the file itself, no blob store)";
  EXPECT_EQ(sha256_hex_of(work / "out/direct_1.0.sif"), hex);
}

TEST_F(LibraryPull, ExecRunsTheImageFromTheCache) {
  auto first = capsa({"exec", "library://capsa/tests/bigbox:1.0", "busybox", "echo", "one"},
                     {"SINGULARITY_LIBRARY=" + library});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, "one\n");
  EXPECT_TRUE(fs::exists(work / ("cache/blobs/sha256/" + hex)));
  auto second = capsa({"run", "library://capsa/tests/bigbox:1.0", "true"}, {"SINGULARITY_LIBRARY=" + library});
  EXPECT_EQ(second.exit_code, 0) << second.err;
}

TEST_F(LibraryPull, BuildBootstrapsFromTheLibrary) {
  work.write("out/lib.def", "Bootstrap: library\nFrom: capsa/tests/bigbox:1.0\nLibrary: " + library +
                                "\n\n%post\n    echo built on the library image > /built\n");
  std::vector<std::string> build = {"build"};
  if (::geteuid() != 0) build.emplace_back("--fakeroot");  // how a user builds
  build.insert(build.end(), {"built.sif", "lib.def"});
  auto built = capsa(build);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  auto ran = capsa({"exec", "built.sif", "cat", "/built"});
  EXPECT_EQ(ran.out, "built on the library image\n") << ran.err;
  auto base = capsa({"inspect", "--labels", "built.sif"});
  EXPECT_NE(base.out.find("library://capsa/tests/bigbox:1.0"), std::string::npos)
      << "the base is recorded: " << base.out;
}

TEST_F(LibraryPull, ADroppedConnectionIsResumed) {
  auto pulled = capsa({"pull", "--library", library, "library://capsa/tests/flaky:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(sha256_hex_of(work / "out/flaky_1.0.sif"), hex) << "every part broken off halfway, then resumed";
}

TEST_F(LibraryPull, FailuresSayWhatAndLeaveNothing) {
  auto missing = capsa({"pull", "--library", library, "library://capsa/tests/nothere:1.0"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("capsa/tests/nothere:1.0 was not found"), std::string::npos) << missing.err;
  expect_nothing_written("nothere_1.0.sif");

  auto damaged = capsa({"pull", "--library", library, "library://capsa/tests/badsum:1.0"});
  EXPECT_NE(damaged.exit_code, 0);
  EXPECT_NE(damaged.err.find("sha256:" + hex), std::string::npos) << "names the digest it got: " << damaged.err;
  expect_nothing_written("badsum_1.0.sif");

  auto old_library = capsa({"pull", "--library", library, "library://capsa/tests/oldlib:1.0"});
  EXPECT_NE(old_library.exit_code, 0);
  EXPECT_NE(old_library.err.find("is built for arm64, not amd64"), std::string::npos) << old_library.err;
  expect_nothing_written("oldlib_1.0.sif");

  auto other_arch = capsa({"pull", "--library", library, "library://capsa/tests/armonly:1.0"});
  EXPECT_NE(other_arch.exit_code, 0);
  EXPECT_NE(other_arch.err.find("not found for amd64"), std::string::npos) << other_arch.err;
  auto asked_for = capsa({"pull", "--arch", "arm64", "--library", library, "library://capsa/tests/armonly:1.0"});
  EXPECT_EQ(asked_for.exit_code, 0) << asked_for.err;

  auto nowhere = capsa({"pull", "library://capsa/tests/bigbox:1.0"});
  EXPECT_NE(nowhere.exit_code, 0);
  EXPECT_NE(nowhere.err.find("no library is configured"), std::string::npos) << nowhere.err;

  // One error line each (progress lines aside, when a download had begun).
  for (const auto* result : {&missing, &damaged, &old_library, &other_arch, &nowhere}) {
    std::istringstream lines(result->err);
    int errors = 0;
    for (std::string line; std::getline(lines, line);) errors += line.rfind("capsa: error: ", 0) == 0 ? 1 : 0;
    EXPECT_EQ(errors, 1) << result->err;
  }
}

}  // namespace
}  // namespace capsa::library
