// `push IMAGE library://`, `delete library://` and `search` against the Library API test
// server (library_server.py) run with a token, through a remote logged in as a user would:
// the multipart and single-part uploads pulled back byte for byte, the signature rule and
// --allow-unsigned, a dropped connection that costs one part, and the refusals (403, a
// token that expires before the tag, no token) that leave nothing tagged. Root and test user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "oci/digest.hpp"
#include "support/background.hpp"
#include "support/isolated_capsa.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"

namespace capsa::library {
namespace {

namespace fs = std::filesystem;
using test::run_process;

constexpr const char* kToken = "capsa-push-token-9d04e1f2";

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Lines of `text` that start with `prefix` and end with `suffix`.
int count_lines(const std::string& text, const std::string& prefix, const std::string& suffix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.starts_with(prefix) && line.ends_with(suffix) ? 1 : 0;
  return n;
}

std::string sha256_hex_of(const std::string& path) { return oci::Digest::sha256_of(test::read_file(path)).hex(); }

class LibraryPush : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(work.path().c_str(), 0755);
    fs::create_directories(work / "home");
    fs::create_directories(work / "out");
    work.write("token", std::string(kToken) + "\n");
    small = work / "small.sif";
    fs::copy_file(test::sif_fixture("real/busybox_amd64.sif"), small);
    work.write("catalog.json",
               R"([{"path": "capsa/tests/box:1.0", "file": ")" + small + R"(", "mode": "normal", "arch": "amd64"}])");
    server = std::make_unique<test::Background>(
        std::vector<std::string>{"env", "LIBRARY_API_VERSION=" + api_version(),
                                 std::string(CAPSA_SOURCE_DIR) + "/tests/library/library_server.py",
                                 work / "catalog.json", work / "ports", work / "token"},
        work / "server.err");
    ASSERT_TRUE(test::eventually([&] { return fs::exists(work / "ports"); }, 30))
        << test::read_file(work / "server.err");
    int port = 0;
    std::ifstream(work / "ports") >> port;
    url = "http://127.0.0.1:" + std::to_string(port);
    ASSERT_EQ(capsa({"remote", "add", "--no-login", "--insecure", "lib", url}).exit_code, 0);
    ASSERT_EQ(capsa({"remote", "use", "lib"}).exit_code, 0);
    auto login = capsa({"remote", "login"}, std::string(kToken) + "\n");
    ASSERT_EQ(login.exit_code, 0) << login.err;
  }

  // The Library API version the server announces.
  virtual std::string api_version() const { return "2.0.0"; }

  // busybox's SIF with 12 MiB of noise added to its object group (so that a signature
  // covers it): three parts of the server's 5 MiB.
  std::string make_big_image() {
    std::string sif = work / "big.sif";
    fs::copy_file(small, sif);
    std::string payload(12 << 20, '\0');
    std::mt19937 random(7);
    for (char& c : payload) c = static_cast<char>(random());
    auto added = run_process(
        {test::capsa_binary(), "sif", "add", "--datatype", "7", "--groupid", "1", sif, work.write("noise", payload)});
    EXPECT_EQ(added.exit_code, 0) << added.err;
    return sif;
  }

  // capsa with HOME (remotes, keys) and the cache in the test's folder, run in out/.
  test::ProcessResult capsa(std::vector<std::string> args, const std::string& input = "") {
    const auto argv =
        test::isolated_capsa_argv({.home = work / "home", .cache = work / "cache", .directory = work / "out"}, args);
    auto result = run_process(argv, input, 300);
    EXPECT_EQ(result.out.find(kToken), std::string::npos) << "the token is never printed";
    EXPECT_EQ(result.err.find(kToken), std::string::npos) << "the token is never printed";
    return result;
  }

  std::string tagged() { return fs::exists(work / "ports.tagged") ? test::read_file(work / "ports.tagged") : ""; }
  std::string requests() { return fs::exists(work / "ports.tokens") ? test::read_file(work / "ports.tokens") : ""; }

  test::TempDir work;
  std::unique_ptr<test::Background> server;
  std::string url, small;
};

TEST_F(LibraryPush, ASignedImageGoesInPartsAndPullsBackByteIdentical) {
  const std::string big = make_big_image();
  auto made = capsa({"key", "newpair", "-N", "Pusher", "-E", "push@example.org", "-b", "2048", "--password-stdin"}, "");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // busybox carries Sylabs' signature (object 5), by a key this keyring lacks: only ours.
  ASSERT_EQ(capsa({"sif", "del", "5", big}).exit_code, 0);
  auto signed_ = capsa({"sign", big});
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;

  auto pushed = capsa({"push", big, "library://capsa/tests/bigbox:1.0,stable"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_NE(pushed.err.find("Pushed library://capsa/tests/bigbox:1.0,stable (sha256:" + sha256_hex_of(big)),
            std::string::npos)
      << pushed.err;
  EXPECT_NE(pushed.out.find("Library storage: using"), std::string::npos) << pushed.out;
  EXPECT_EQ(tagged(), "capsa/tests/bigbox:1.0 amd64\ncapsa/tests/bigbox:stable amd64\n");
  const std::string sent = requests();
  EXPECT_NE(sent.find("POST /v1/entities\n"), std::string::npos) << "the entity was created: " << sent;
  EXPECT_NE(sent.find("/_multipart_complete\n"), std::string::npos) << "a multipart upload: " << sent;
  EXPECT_EQ(count_lines(sent, "PUT /v2/imagefile/", "/_multipart"), 3) << "three parts: " << sent;

  for (const std::string tag : {"1.0", "stable"}) {
    auto pulled = capsa({"pull", "library://capsa/tests/bigbox:" + tag});
    ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
    EXPECT_EQ(sha256_hex_of(work / ("out/bigbox_" + tag + ".sif")), sha256_hex_of(big)) << tag;
  }
  // Again: the library has the file, so only the tag is set.
  auto again = capsa({"push", big, "library://capsa/tests/bigbox:1.1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("the library had the file already"), std::string::npos) << again.err;
  EXPECT_NE(tagged().find("capsa/tests/bigbox:1.1 amd64\n"), std::string::npos);
}

TEST_F(LibraryPush, AnUnsignedImageNeedsAllowUnsignedAndASmallOneGoesWhole) {
  auto refused = capsa({"push", small, "library://capsa/tests/small:1.0"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_EQ(lines(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find("--allow-unsigned"), std::string::npos) << refused.err;
  EXPECT_EQ(requests().find("POST"), std::string::npos) << "nothing was sent: " << requests();
  EXPECT_EQ(tagged(), "");

  auto pushed = capsa({"push", "-U", small, "library://capsa/tests/small:1.0"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  EXPECT_NE(pushed.err.find("Skipping container verification"), std::string::npos) << pushed.err;
  const std::string sent = requests();
  EXPECT_EQ(sent.find("_multipart"), std::string::npos) << "one piece under 5 MiB: " << sent;
  EXPECT_NE(sent.find("/_complete\n"), std::string::npos) << sent;
  EXPECT_EQ(tagged(), "capsa/tests/small:1.0 amd64\n");
  auto pulled = capsa({"pull", "back.sif", "library://capsa/tests/small:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(sha256_hex_of(work / "out/back.sif"), sha256_hex_of(small));
}

TEST_F(LibraryPush, ADroppedConnectionSendsThatPartAgain) {
  const std::string big = make_big_image();
  auto pushed = capsa({"push", "--allow-unsigned", big, "library://capsa/tests/flaky:1.0"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  ASSERT_TRUE(fs::exists(work / "ports.drops")) << "the server broke no upload off";
  EXPECT_EQ(test::read_file(work / "ports.drops"), "part 1\npart 2\npart 3\n");
  EXPECT_EQ(test::read_file(work / "ports.stored"), "part 1\npart 2\npart 3\n")
      << "each part was taken once: none that had arrived was sent again";
  // libcurl itself sends a request again when a reused connection turns out closed, so
  // capsa counts at least the first part (on a fresh connection) but not always all three.
  EXPECT_NE(pushed.err.find("part(s) sent again"), std::string::npos) << pushed.err;
  auto pulled = capsa({"pull", "library://capsa/tests/flaky:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(sha256_hex_of(work / "out/flaky_1.0.sif"), sha256_hex_of(big));
}

TEST_F(LibraryPush, RefusalsAreOneLineAndTagNothing) {
  // 403: the entity is someone else's.
  auto forbidden = capsa({"push", "-U", small, "library://someoneelse/theirs/box:1.0"});
  EXPECT_NE(forbidden.exit_code, 0);
  EXPECT_EQ(lines(forbidden.err), 2) << "the warning and one error: " << forbidden.err;
  EXPECT_NE(forbidden.err.find("refused POST /v1/collections (HTTP 403: you may not push to entity someoneelse)"),
            std::string::npos)
      << forbidden.err;

  // 401 naming the endpoint: the token expires after the upload, before the tag.
  auto expired = capsa({"push", "-U", small, "library://capsa/tests/expires:1.0"});
  EXPECT_NE(expired.exit_code, 0);
  EXPECT_NE(expired.err.find("rejected the token of remote lib at POST /v2/tags/"), std::string::npos) << expired.err;
  EXPECT_NE(expired.err.find("HTTP 401: token expired"), std::string::npos) << expired.err;
  EXPECT_NE(expired.err.find("capsa remote login lib"), std::string::npos) << expired.err;
  EXPECT_EQ(tagged(), "") << "nothing is tagged";
  auto not_there = capsa({"pull", "library://capsa/tests/expires:1.0"});
  EXPECT_NE(not_there.exit_code, 0) << "the uploaded file has no tag to pull it by";

  // No token for another endpoint (the same server under another name).
  const std::string other = "http://localhost:" + url.substr(url.rfind(':') + 1);
  auto no_token = capsa({"push", "-U", "--library", other, small, "library://capsa/tests/small:1.0"});
  EXPECT_NE(no_token.exit_code, 0);
  EXPECT_EQ(lines(no_token.err), 1) << "refused before the image is looked at: " << no_token.err;
  EXPECT_NE(no_token.err.find("needs a token"), std::string::npos) << no_token.err;

  auto short_ref = capsa({"push", "-U", small, "library://box:1.0"});
  EXPECT_NE(short_ref.exit_code, 0);
  EXPECT_NE(short_ref.err.find("name the entity, the collection and the container"), std::string::npos)
      << short_ref.err;
  EXPECT_EQ(tagged(), "");
}

TEST_F(LibraryPush, DeleteAsksUnlessForcedAndDeletesOneArchitecture) {
  ASSERT_EQ(capsa({"push", "-U", small, "library://capsa/tests/gone:1.0"}).exit_code, 0);
  auto kept = capsa({"delete", "library://capsa/tests/gone:1.0"}, "n\n");
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_NE(kept.err.find("Are you sure you want to delete capsa/tests/gone:1.0 (amd64) [y/N]"), std::string::npos)
      << kept.err;
  EXPECT_EQ(capsa({"pull", "kept.sif", "library://capsa/tests/gone:1.0"}).exit_code, 0) << "answered no";

  auto other_arch = capsa({"delete", "--force", "--arch", "arm64", "library://capsa/tests/gone:1.0"});
  EXPECT_NE(other_arch.exit_code, 0);
  EXPECT_EQ(lines(other_arch.err), 1) << other_arch.err;
  EXPECT_NE(other_arch.err.find("capsa/tests/gone:1.0 was not found for arm64"), std::string::npos) << other_arch.err;

  auto bad_answer = capsa({"delete", "library://capsa/tests/gone:1.0"}, "perhaps\n");
  EXPECT_NE(bad_answer.exit_code, 0);
  EXPECT_NE(bad_answer.err.find("invalid answer"), std::string::npos) << bad_answer.err;

  auto deleted = capsa({"delete", "library://capsa/tests/gone:1.0"}, "y\n");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_NE(deleted.err.find("Image capsa/tests/gone:1.0 (amd64) deleted."), std::string::npos) << deleted.err;
  auto gone = capsa({"pull", "gone.sif", "library://capsa/tests/gone:1.0"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_NE(gone.err.find("was not found"), std::string::npos) << gone.err;

  auto forced = capsa({"delete", "-F", "library://capsa/tests/box:1.0"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(requests().find("DELETE /v1/images/capsa/tests/box:1.0"), std::string::npos) << "with the token";

  auto not_library = capsa({"delete", "-F", "docker://busybox"});
  EXPECT_NE(not_library.exit_code, 0);
  EXPECT_EQ(lines(not_library.err), 1) << not_library.err;
}

TEST_F(LibraryPush, SearchListsTheImagesItFinds) {
  ASSERT_EQ(
      capsa({"push", "-U", "--description", "Busybox for the search", small, "library://capsa/tests/findme:1.0,latest"})
          .exit_code,
      0);
  auto found = capsa({"search", "--arch", "amd64", "findme"});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  EXPECT_EQ(found.out,
            "Found 1 container images for amd64 matching \"findme\":\n\n"
            "\tlibrary://capsa/tests/findme:1.0,latest\n\t\tBusybox for the search\n\n");
  auto both = capsa({"search", "--arch", "amd64", "tests"});
  EXPECT_NE(both.out.find("Found 2 container images for amd64 matching \"tests\":\n\n"
                          "\tlibrary://capsa/tests/box:1.0\n\n\tlibrary://capsa/tests/findme:1.0,latest\n"),
            std::string::npos)
      << both.out;
  auto none = capsa({"search", "--arch", "arm64", "findme"});
  EXPECT_EQ(none.out, "No container images found for arm64 matching \"findme\".\n\n") << none.err;
  auto signed_only = capsa({"search", "--signed", "--arch", "amd64", "findme"});
  EXPECT_EQ(signed_only.out, "No container images found for amd64 matching \"findme\".\n\n") << signed_only.err;
  EXPECT_NE(requests().find("GET /v1/search"), std::string::npos) << "with the token";
  auto too_short = capsa({"search", "fi"});
  EXPECT_NE(too_short.exit_code, 0);
  EXPECT_EQ(lines(too_short.err), 1) << too_short.err;
  EXPECT_NE(too_short.err.find("at least 3 characters"), std::string::npos) << too_short.err;
}

// A library older than API 2.0.0-alpha.1: no v2 upload, one tag for all architectures.
class OldLibraryPush : public LibraryPush {
 protected:
  std::string api_version() const override { return "1.0.0"; }
};

TEST_F(OldLibraryPush, TakesTheFileInOneRequestAndTheV1Tag) {
  auto pushed = capsa({"push", "-U", small, "library://capsa/tests/old:1.0"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string sent = requests();
  EXPECT_EQ(count_lines(sent, "POST /v1/imagefile/", ""), 1) << sent;
  EXPECT_EQ(count_lines(sent, "POST /v1/tags/", ""), 1) << sent;
  EXPECT_EQ(sent.find("/v2/"), std::string::npos) << "nothing of API v2: " << sent;
  EXPECT_EQ(tagged(), "capsa/tests/old:1.0 amd64\n");
  auto pulled = capsa({"pull", "old.sif", "library://capsa/tests/old:1.0"});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(sha256_hex_of(work / "out/old.sif"), sha256_hex_of(small));
}

}  // namespace
}  // namespace capsa::library
