// `capsa push IMAGE.sif oras://REF`, then `pull`/`exec oras://REF`, end to end against the
// real test registries (tests/test_registries: plain HTTP, TLS + tokens, one storage).
// What was published is read back with a plain HTTP client (manifest_of.py), not capsa.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "oci/digest.hpp"
#include "registry/testbed.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::push {
namespace {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

std::string unique_name(const std::string& prefix) {
  std::random_device random;
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(random() % 1000000);
}

class Push : public ::testing::Test {
 protected:
  TempDir work;
  std::string cache = work / "cache";
  std::string home = work / "home";
  // The title annotation is the file's name: push a copy under a known one.
  std::string sif = work / "busybox_amd64.sif";

  void SetUp() override {
    std::filesystem::create_directories(home);
    std::filesystem::copy_file(test::sif_fixture("real/busybox_amd64.sif"), sif);
  }

  // capsa with a private cache and HOME (no stored logins), the test CA trusted.
  ProcessResult capsa(std::vector<std::string> args, std::vector<std::string> env = {}, const std::string& input = "") {
    std::vector<std::string> argv = {"env",
                                     "-u",
                                     "DOCKER_CONFIG",
                                     "-u",
                                     "APPTAINER_CONFIGDIR",
                                     "HOME=" + home,
                                     "CAPSA_CACHEDIR=" + cache,
                                     "CAPSA_REGISTRY_CA=" + test::test_registry().ca_file};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(test::capsa_binary());
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, input, 300);
  }
  std::vector<std::string> oauth() const {
    return {"APPTAINER_DOCKER_USERNAME=$oauthtoken", "APPTAINER_DOCKER_PASSWORD=" + test::test_registry().api_key};
  }
  static std::string plain(const std::string& repo) { return "oras://" + test::test_registry().plain + "/" + repo; }
  static std::string token(const std::string& repo) { return "oras://" + test::test_registry().token + "/" + repo; }

  // The manifest as a plain HTTP client gets it from the plain registry (one storage for all).
  static nlohmann::json manifest_of(const std::string& repository, const std::string& tag) {
    auto result = run_process({"/usr/bin/python3", std::string(CAPSA_PUSH_TEST_DIR) + "/manifest_of.py",
                               "http://" + test::test_registry().plain + "/v2/" + repository + "/manifests/" + tag});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out);
  }
  static std::string sha256_of_file(const std::string& path) {
    return oci::Digest::sha256_of(test::read_file(path)).to_string();
  }
  static int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

  // What Apptainer's `push oras://` publishes (internal/pkg/client/oras/image.go), checked
  // field by field.
  void expect_apptainer_artifact(const std::string& repository, const std::string& tag) {
    const nlohmann::json answer = manifest_of(repository, tag);
    ASSERT_EQ(answer["status"], 200) << answer.dump();
    EXPECT_EQ(answer["content_type"], "application/vnd.oci.image.manifest.v1+json");
    const nlohmann::json& m = answer["manifest"];
    EXPECT_EQ(m["schemaVersion"], 2);
    EXPECT_EQ(m["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    EXPECT_EQ(m["config"]["mediaType"], "application/vnd.sylabs.sif.config.v1+json");
    EXPECT_EQ(m["config"]["size"], 2);
    EXPECT_EQ(m["config"]["digest"], "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    EXPECT_EQ(m["config"]["data"], "e30=");
    ASSERT_EQ(m["layers"].size(), 1u) << m.dump();
    const nlohmann::json& layer = m["layers"][0];
    EXPECT_EQ(layer["mediaType"], "application/vnd.sylabs.sif.layer.v1.sif");
    EXPECT_EQ(layer["digest"], sha256_of_file(sif));
    EXPECT_EQ(layer["size"], std::filesystem::file_size(sif));
    EXPECT_EQ(layer["annotations"]["org.opencontainers.image.title"], "busybox_amd64.sif");
    // Singularity 3.8 wrote inspect-metadata.json without org.opencontainers.image.created:
    // Apptainer then sets no annotation, and go-containerregistry omits the empty map.
    EXPECT_FALSE(m.contains("annotations")) << m.dump();
  }
};

TEST_F(Push, PlainRegistryRoundTripIsByteIdenticalAndApptainersFormat) {
  const std::string repo = unique_name("public/push-plain");
  auto pushed = capsa({"push", "--nohttps", sif, plain(repo + ":1.0")});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  expect_apptainer_artifact(repo, "1.0");

  // pull's default name is Apptainer's: CONTAINER_TAG.sif.
  ASSERT_EQ(::chdir(work.path().c_str()), 0);
  auto pulled = capsa({"pull", "--nohttps", plain(repo + ":1.0")});
  ASSERT_EQ(::chdir("/"), 0);
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  const std::string name = repo.substr(repo.rfind('/') + 1) + "_1.0.sif";
  EXPECT_EQ(test::read_file(work / name), test::read_file(sif)) << "the pulled SIF differs from the pushed one";
  struct stat st {};
  ASSERT_EQ(::stat((work / name).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0100, 0100u) << "a SIF is executable";

  // Pushing the same file again sends only the manifest.
  auto again = capsa({"push", "--nohttps", sif, plain(repo + ":again")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("already had the SIF"), std::string::npos) << again.err;
}

TEST_F(Push, TokenRegistryRoundTripWithPushRights) {
  const std::string repo = unique_name("private/push-token");
  auto pushed = capsa({"push", sif, token(repo + ":v1")}, oauth());
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  expect_apptainer_artifact(repo, "v1");

  const std::string out = work / "back.sif";
  auto pulled = capsa({"pull", out, token(repo + ":v1")}, oauth());
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(test::read_file(out), test::read_file(sif));
  // By digest too, from the cache (keyed by the SIF's digest).
  auto by_digest =
      capsa({"pull", work / "by-digest.sif", token(repo + "@" + manifest_of(repo, "v1")["digest"].get<std::string>())},
            oauth());
  ASSERT_EQ(by_digest.exit_code, 0) << by_digest.err;
  EXPECT_EQ(test::read_file(work / "by-digest.sif"), test::read_file(sif));
}

// --docker-username/--docker-password and --authfile carry the credentials as for pull;
// -U and -D are library:// flags Apptainer accepts (and, for -D, warns about) on oras://.
TEST_F(Push, CredentialFlagsAuthfileAndLibraryOnlyFlags) {
  const auto& r = test::test_registry();
  const std::string repo = unique_name("private/push-flags");
  auto flags = capsa({"push", "--docker-username", "$oauthtoken", "--docker-password", r.api_key, "-U", "-D",
                      "a description", sif, token(repo + ":flags")});
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  EXPECT_NE(flags.err.find("Description is not supported for push to oras. Ignoring it."), std::string::npos)
      << flags.err;
  expect_apptainer_artifact(repo, "flags");

  const std::string authfile = work.write(
      "auth.json", R"({"auths":{")" + r.token + R"(":{"username":"$oauthtoken","password":")" + r.api_key + R"("}}})");
  auto with_file = capsa({"push", "--authfile", authfile, sif, token(repo + ":authfile")});
  ASSERT_EQ(with_file.exit_code, 0) << with_file.err;
  expect_apptainer_artifact(repo, "authfile");
}

TEST_F(Push, ARejectedPushIsOneLineAndPublishesNothing) {
  const std::string repo = unique_name("private/push-rejected");
  // No credentials at all: the token service refuses.
  // -q: no progress lines, so that the error is all there is.
  auto anonymous = capsa({"-q", "push", sif, token(repo + ":x")});
  EXPECT_EQ(anonymous.exit_code, 1) << anonymous.err;
  EXPECT_EQ(lines(anonymous.err), 1) << anonymous.err;
  EXPECT_NE(anonymous.err.find("401"), std::string::npos) << anonymous.err;
  EXPECT_NE(anonymous.err.find(test::test_registry().token), std::string::npos) << anonymous.err;
  // Valid credentials that grant pull only: the registry refuses the upload.
  auto pull_only =
      capsa({"-q", "push", sif, token(repo + ":x")},
            {"APPTAINER_DOCKER_USERNAME=short-lived", "APPTAINER_DOCKER_PASSWORD=" + test::test_registry().api_key});
  EXPECT_EQ(pull_only.exit_code, 1) << pull_only.err;
  EXPECT_EQ(lines(pull_only.err), 1) << pull_only.err;
  EXPECT_NE(pull_only.err.find("do not grant push access"), std::string::npos) << pull_only.err;
  EXPECT_EQ(pull_only.err.find(test::test_registry().api_key), std::string::npos) << "the secret was printed";
  EXPECT_EQ(manifest_of(repo, "x")["status"], 404) << "a rejected push published a tag";

  // Not a SIF, and not an oras:// destination: one line each, before any network.
  auto not_sif = capsa({"push", "--nohttps", work.write("x.sif", "not a sif"), plain(repo + ":x")});
  EXPECT_EQ(not_sif.exit_code, 1);
  EXPECT_NE(not_sif.err.find("is not a SIF image"), std::string::npos) << not_sif.err;
  auto docker = capsa({"push", sif, "docker://example.invalid/x:1"});
  EXPECT_EQ(docker.exit_code, 1);
  EXPECT_NE(docker.err.find("must be oras://"), std::string::npos) << docker.err;
}

TEST_F(Push, ADroppedConnectionMidUploadResumesFromTheRegistrysOffset) {
  test::FaultProxy proxy(test::test_registry().plain);
  // Three 64 KiB chunks go through, then the connection drops 10 kB into the fourth (twice:
  // libcurl itself sends a request again once when a kept-alive connection closes).
  proxy.configure({{"cut_upload", {{"after_bytes", 10000}, {"count", 2}, {"skip", 3}}}});
  const std::string repo = unique_name("public/push-cut");
  auto pushed = capsa({"push", "--nohttps", sif, "oras://" + proxy.front() + "/" + repo + ":1"},
                      {"CAPSA_PUSH_CHUNK_BYTES=65536"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;

  std::vector<nlohmann::json> uploads;
  std::vector<std::string> trace;
  for (const auto& request : proxy.requests()) {
    if (request["path"].get<std::string>().find("/blobs/uploads/") == std::string::npos) continue;
    uploads.push_back(request);
    trace.push_back(request["method"].get<std::string>() + " " + std::to_string(request["status"].get<int>()));
  }
  const std::size_t cut = std::find(trace.rbegin(), trace.rend(), "PATCH 0").base() - trace.begin();
  ASSERT_GT(cut, 0u) << "the fault never fired: " << testing::PrintToString(trace);
  ASSERT_LT(cut + 1, trace.size()) << testing::PrintToString(trace);
  EXPECT_EQ(trace[cut], "GET 204") << "after the drop the upload's status is asked for: "
                                   << testing::PrintToString(trace);
  EXPECT_EQ(trace[cut + 1], "PATCH 202");
  EXPECT_EQ(uploads[cut + 1]["content_range"], "196608-262143") << "the upload resumes where the registry stands";
  EXPECT_EQ(std::count(trace.begin(), trace.end(), "POST 202"), 2)
      << "one upload for the config, one for the SIF, no restart: " << testing::PrintToString(trace);
  EXPECT_EQ(trace.back(), "PUT 201");
  EXPECT_NE(pushed.err.find("at byte 196608"), std::string::npos) << pushed.err;

  expect_apptainer_artifact(repo, "1");
  auto pulled = capsa({"pull", "--nohttps", work / "back.sif", plain(repo + ":1")});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(test::read_file(work / "back.sif"), test::read_file(sif));
}

// A registry that lost the upload (here: the session is cancelled behind capsa's back, as
// distribution does when an upload resumes at the wrong offset) makes capsa start afresh.
TEST_F(Push, AnUploadTheRegistryLostStartsAgain) {
  test::FaultProxy proxy(test::test_registry().plain);
  proxy.configure({{"cut_upload", {{"after_bytes", 10000}, {"count", 2}, {"skip", 2}, {"cancel", true}}}});
  const std::string repo = unique_name("public/push-lost");
  auto pushed = capsa({"push", "--nohttps", sif, "oras://" + proxy.front() + "/" + repo + ":1"},
                      {"CAPSA_PUSH_CHUNK_BYTES=65536"});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  std::vector<std::string> trace;
  for (const auto& request : proxy.requests())
    if (request["path"].get<std::string>().find("/blobs/uploads/") != std::string::npos)
      trace.push_back(request["method"].get<std::string>() + " " + std::to_string(request["status"].get<int>()));
  EXPECT_EQ(std::count(trace.begin(), trace.end(), "POST 202"), 3)
      << "the SIF's upload was started again: " << testing::PrintToString(trace);
  EXPECT_NE(pushed.err.find("starting it again"), std::string::npos) << pushed.err;
  auto pulled = capsa({"pull", "--nohttps", work / "back.sif", plain(repo + ":1")});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  EXPECT_EQ(test::read_file(work / "back.sif"), test::read_file(sif));
}

TEST_F(Push, ExecOfAnOrasReferenceRunsTheSifFromTheCache) {
  const std::string repo = unique_name("public/push-exec");
  ASSERT_EQ(capsa({"push", "--nohttps", sif, plain(repo + ":1")}).exit_code, 0);
  auto run = capsa({"exec", "--nohttps", plain(repo + ":1"), "echo", "from oras"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "from oras\n") << run.err;
  // Cached under the SIF's own digest, as Apptainer's oras cache keys it.
  const std::string digest = sha256_of_file(sif);
  const std::string entry = cache + "/blobs/sha256/" + digest.substr(7);
  ASSERT_TRUE(std::filesystem::exists(entry)) << entry;
  EXPECT_EQ(test::read_file(entry), test::read_file(sif));
  auto second = capsa({"run", "--nohttps", plain(repo + ":1"), "true"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
}

// A registry serving other bytes than the layer's digest: refused after one more try, in
// one line; no output file and no cache entry under that digest.
TEST_F(Push, AnOrasSifWhoseBytesDoNotMatchItsDigestIsRefused) {
  const std::string repo = unique_name("public/push-corrupt");
  ASSERT_EQ(capsa({"push", "--nohttps", sif, plain(repo + ":1")}).exit_code, 0);
  test::FaultProxy proxy(test::test_registry().plain);
  const std::string digest = sha256_of_file(sif);
  proxy.configure({{"corrupt", {{"count", 2}, {"path", digest}}}});
  auto pulled = capsa({"-q", "pull", "--nohttps", work / "bad.sif", "oras://" + proxy.front() + "/" + repo + ":1"});
  EXPECT_EQ(pulled.exit_code, 1);
  EXPECT_EQ(lines(pulled.err), 1) << pulled.err;
  EXPECT_NE(pulled.err.find("does not match its digest"), std::string::npos) << pulled.err;
  EXPECT_FALSE(std::filesystem::exists(work / "bad.sif"));
  EXPECT_FALSE(std::filesystem::exists(cache + "/blobs/sha256/" + digest.substr(7)));
}

TEST_F(Push, PullOfADockerImageAsOrasSaysWhyInOneLine) {
  auto one_layer = capsa({"pull", "--nohttps", work / "a.sif", plain("public/busybox:1.0")});
  EXPECT_EQ(one_layer.exit_code, 1);
  EXPECT_EQ(lines(one_layer.err), 1) << one_layer.err;
  EXPECT_NE(one_layer.err.find("invalid layer media type 'application/vnd.oci.image.layer.v1.tar+gzip'"),
            std::string::npos)
      << one_layer.err;
  auto layers = capsa({"pull", "--nohttps", work / "b.sif", plain("public/layers:latest")});
  EXPECT_EQ(layers.exit_code, 1);
  EXPECT_EQ(lines(layers.err), 1) << layers.err;
  EXPECT_NE(layers.err.find("should have a single layer, found"), std::string::npos) << layers.err;
  EXPECT_FALSE(std::filesystem::exists(work / "a.sif"));
  EXPECT_FALSE(std::filesystem::exists(work / "b.sif"));
}

}  // namespace
}  // namespace capsa::push
