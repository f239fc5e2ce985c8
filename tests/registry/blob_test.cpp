// Blob downloads: verification, resume, retries, stalls, redirects, parallel fetching.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>

#include "oci/digest.hpp"
#include "registry/helpers.hpp"
#include "support/temp_dir.hpp"

namespace capsa::registry {
namespace {

using test::TempDir;

std::string file_digest(const std::string& path) { return oci::Digest::compute("sha256", test::read_file(path)).to_string(); }

BlobTarget layer_target(const test::Testbed& bed, const std::string& path) {
  return {bed.public_image.layer.digest, bed.public_image.layer.size, path};
}

// The first `bytes` of the real layer in `path` (a download interrupted there).
void write_partial(const test::Testbed& bed, const std::string& path, std::uint64_t bytes) {
  Logged logged(true);
  RegistryClient direct(bed.registries.plain, logged.options);
  direct.fetch_blob(bed.public_image.repository, layer_target(bed, path));
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(bytes)), 0);
}

std::vector<nlohmann::json> blob_requests(const test::Testbed& bed) {
  std::vector<nlohmann::json> blobs;
  for (auto& request : bed.proxy.requests())
    if (request["path"].get<std::string>().find("/blobs/") != std::string::npos) blobs.push_back(request);
  return blobs;
}

TEST(Blobs, DownloadIsVerifiedAndReportsProgress) {
  REQUIRE_TESTBED();
  TempDir dir;
  Logged logged(true);
  RegistryClient client(bed->registries.plain, logged.options);
  std::vector<std::uint64_t> seen;
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "layer"),
                    [&](std::uint64_t done, std::optional<std::uint64_t> total) {
                      seen.push_back(done);
                      EXPECT_EQ(total, bed->public_image.layer.size);
                    });
  EXPECT_EQ(file_digest(dir / "layer"), bed->public_image.layer.digest);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), bed->public_image.layer.size);
  // A complete file is recognised without downloading again.
  seen.clear();
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "layer"),
                    [&](std::uint64_t done, std::optional<std::uint64_t>) { seen.push_back(done); });
  EXPECT_TRUE(seen.empty());
}

TEST(Blobs, PartialFileIsResumedWithRange) {
  REQUIRE_TESTBED();
  TempDir dir;
  write_partial(*bed, dir / "layer", 1 << 20);
  bed->proxy.configure({});
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  std::uint64_t first_report = 0;
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "layer"),
                    [&](std::uint64_t done, std::optional<std::uint64_t>) {
                      if (first_report == 0) first_report = done;
                    });
  EXPECT_EQ(file_digest(dir / "layer"), bed->public_image.layer.digest);
  auto requests = blob_requests(*bed);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["range"], "bytes=1048576-");
  EXPECT_EQ(requests[0]["status"], 206);
  EXPECT_GT(first_report, 1u << 20);
}

TEST(Blobs, CompleteFileOfUnknownSizeIsCheckedAfter416) {
  REQUIRE_TESTBED();
  TempDir dir;
  write_partial(*bed, dir / "layer", bed->public_image.layer.size);
  bed->proxy.configure({});
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  client.fetch_blob(bed->public_image.repository, {bed->public_image.layer.digest, std::nullopt, dir / "layer"});
  EXPECT_EQ(file_digest(dir / "layer"), bed->public_image.layer.digest);
  auto requests = blob_requests(*bed);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0]["status"], 416);
  // Straight from distribution, whose 416 announces more body than it sends.
  RegistryClient direct(bed->registries.plain, logged.options);
  direct.fetch_blob(bed->public_image.repository, {bed->public_image.layer.digest, std::nullopt, dir / "layer"});
  EXPECT_EQ(file_digest(dir / "layer"), bed->public_image.layer.digest);
  EXPECT_EQ(logged.all(), "");  // no retries were needed
}

TEST(Blobs, ServerIgnoringRangeOrAnsweringAnotherRangeRestartsCleanly) {
  REQUIRE_TESTBED();
  TempDir dir;
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  write_partial(*bed, dir / "a", 1 << 20);
  bed->proxy.configure({{"ignore_range", true}});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "a"));
  EXPECT_EQ(file_digest(dir / "a"), bed->public_image.layer.digest);  // a 200 body was never appended
  EXPECT_NE(logged.all().find("ignored the Range request"), std::string::npos) << logged.all();
  EXPECT_EQ(blob_requests(*bed).size(), 1u);

  write_partial(*bed, dir / "b", 1 << 20);
  bed->proxy.configure({{"bad_range", {{"count", 1}}}});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "b"));
  EXPECT_EQ(file_digest(dir / "b"), bed->public_image.layer.digest);
  auto requests = blob_requests(*bed);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1]["range"], nullptr);  // restarted from zero
}

TEST(Blobs, CorruptPartialFileOrCorruptTransferIsDiscardedAndRetriedOnce) {
  REQUIRE_TESTBED();
  TempDir dir;
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  bed->proxy.configure({{"corrupt", {{"count", 1}}}});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "layer"));
  EXPECT_EQ(file_digest(dir / "layer"), bed->public_image.layer.digest);
  EXPECT_NE(logged.all().find("does not match its digest; downloading it again"), std::string::npos);

  bed->proxy.configure({{"corrupt", {{"count", 2}}}});
  auto error = error_of([&] { client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "bad")); });
  EXPECT_EQ(error.kind(), ErrorKind::kDigestMismatch);
  EXPECT_NE(std::string(error.what()).find("blob " + bed->public_image.layer.digest), std::string::npos);
  EXPECT_NE(::access((dir / "bad").c_str(), F_OK), 0);  // nothing corrupt is left behind
  EXPECT_EQ(blob_requests(*bed).size(), 2u);
}

TEST(Blobs, StalledOrCutTransferIsResumedAndPersistentStallIsAClearError) {
  REQUIRE_TESTBED();
  TempDir dir;
  Logged logged(true);
  logged.options.stall_seconds = 1;
  RegistryClient client(bed->proxy.front(), logged.options);
  bed->proxy.configure({{"stall", {{"after_bytes", 1 << 20}, {"count", 1}, {"seconds", 10}}}});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "stalled"));
  EXPECT_EQ(file_digest(dir / "stalled"), bed->public_image.layer.digest);
  auto requests = blob_requests(*bed);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1]["range"], "bytes=1048576-");
  EXPECT_NE(logged.all().find("stopped sending (no data for 1 s)"), std::string::npos) << logged.all();

  bed->proxy.configure({{"truncate", {{"after_bytes", 2 << 20}, {"count", 1}}}});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "cut"));
  EXPECT_EQ(file_digest(dir / "cut"), bed->public_image.layer.digest);
  EXPECT_EQ(blob_requests(*bed).back()["range"], "bytes=2097152-");

  logged.options.max_retries = 1;
  RegistryClient impatient(bed->proxy.front(), logged.options);
  bed->proxy.configure({{"stall", {{"after_bytes", 1000}, {"count", 5}, {"seconds", 10}}}});
  auto error = error_of([&] { impatient.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "never")); });
  EXPECT_EQ(error.kind(), ErrorKind::kStalled);
  EXPECT_NE(std::string(error.what()).find("run again to resume"), std::string::npos) << error.what();
}

TEST(Blobs, RetryAfter429And500ThenSuccess) {
  REQUIRE_TESTBED();
  TempDir dir;
  Logged logged(true);
  RegistryClient client(bed->proxy.front(), logged.options);
  bed->proxy.configure({{"fail", {{"status", 429}, {"count", 1}, {"retry_after", "1"}, {"path", "/blobs/"}}}});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "a"));
  EXPECT_EQ(file_digest(dir / "a"), bed->public_image.layer.digest);
  EXPECT_NE(logged.all().find("retrying in 1000 ms"), std::string::npos);
  bed->proxy.configure({{"fail", {{"status", 500}, {"count", 2}, {"path", "/blobs/"}}}});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "b"));
  EXPECT_EQ(file_digest(dir / "b"), bed->public_image.layer.digest);
  EXPECT_EQ(blob_requests(*bed).size(), 3u);
}

TEST(Blobs, RedirectToAnotherOriginNeverCarriesAuthorization) {
  REQUIRE_TESTBED();
  TempDir dir;
  Logged logged(true);
  const std::string password = "proxy-REDIRECT-SECRET";
  bed->proxy.configure({{"basic", {{"user", "u"}, {"password", password}}}, {"redirect_blobs", true}});
  RegistryClient client(bed->proxy.front(), logged.options, Credentials{"u", password, "", "the test"});
  client.fetch_blob(bed->public_image.repository, layer_target(*bed, dir / "layer"));
  EXPECT_EQ(file_digest(dir / "layer"), bed->public_image.layer.digest);
  bool front_authorised = false, storage_seen = false;
  for (const auto& request : bed->proxy.requests()) {
    if (request["listener"] == "front" && request["status"] == 307) front_authorised = request["authorization"];
    if (request["listener"] == "storage") {
      storage_seen = true;
      EXPECT_FALSE(request["authorization"].get<bool>()) << request.dump();
    }
  }
  EXPECT_TRUE(front_authorised);
  EXPECT_TRUE(storage_seen);
  bed->proxy.configure({});
}

TEST(Blobs, ParallelFetchSucceedsAndFirstErrorCancelsTheRest) {
  REQUIRE_TESTBED();
  TempDir dir;
  Logged logged(true);
  logged.options.parallel_downloads = 3;
  RegistryClient client(bed->proxy.front(), logged.options);
  bed->proxy.configure({});
  const auto& image = bed->public_image;
  std::vector<BlobTarget> blobs = {{image.layer.digest, image.layer.size, dir / "1"},
                                   {image.config.digest, image.config.size, dir / "2"},
                                   {image.layer.digest, image.layer.size, dir / "3"},
                                   {image.config.digest, std::nullopt, dir / "4"}};
  std::atomic<int> reports{0};
  client.fetch_blobs(image.repository, blobs, [&](std::size_t index, std::uint64_t, std::optional<std::uint64_t>) {
    EXPECT_LT(index, blobs.size());
    ++reports;
  });
  for (const auto& blob : blobs) EXPECT_EQ(file_digest(blob.path), blob.digest);
  EXPECT_GE(reports.load(), 4);

  // One unknown blob among stalled ones: its 404 ends the whole batch at once.
  bed->proxy.configure({{"stall", {{"after_bytes", 1000}, {"count", 10}, {"seconds", 20}}}});
  const std::string unknown = "sha256:" + std::string(64, '0');
  std::vector<BlobTarget> doomed = {{image.layer.digest, image.layer.size, dir / "s1"},
                                    {image.layer.digest, image.layer.size, dir / "s2"},
                                    {unknown, 10, dir / "missing"}};
  auto error = error_of([&] { client.fetch_blobs(image.repository, doomed); });
  EXPECT_EQ(error.kind(), ErrorKind::kNotFound);
  EXPECT_NE(std::string(error.what()).find("blob " + unknown + " not found"), std::string::npos) << error.what();
  EXPECT_NE(::access((dir / "missing").c_str(), F_OK), 0);  // no empty file left behind
  bed->proxy.configure({});
}

}  // namespace
}  // namespace capsa::registry
