// The cache's single-process contract: layout and permissions, put/get/has, keys that
// cannot escape the root, where the cache lives, and copies out of it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "cache/cache.hpp"
#include "processes.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::cache {
namespace {

using capsa::test::TempDir;

const std::string kHexA(64, 'a');
const std::string kHexB(64, 'b');

UniqueFd open_read(const std::string& path) { return open_file(path, O_RDONLY); }

unsigned mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

std::vector<std::string> names_under(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    names.push_back(std::filesystem::relative(entry.path(), dir).string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Cache, NewCacheIsPrivateAndHasItsLayout) {
  TempDir dir;
  Cache cache(dir / "a/b/cache");
  EXPECT_EQ(mode_of(cache.root()), 0700u);
  for (const char* sub : {"/blobs/sha256", "/sif", "/tmp"})
    EXPECT_TRUE(std::filesystem::is_directory(cache.root() + sub)) << sub;
  EXPECT_EQ(capsa::test::read_file(cache.root() + "/CACHEDIR.TAG").rfind("Signature: 8a477f597d28d172789f06886806bc55\n", 0),
            0u);
  // Opening it again (another rank) changes nothing and does not fail.
  Cache again(dir / "a/b/cache");
  EXPECT_EQ(mode_of(again.root()), 0700u);
}

TEST(Cache, RootThatIsAFileIsAClearError) {
  TempDir dir;
  std::string file = dir.write("cache", "not a directory");
  try {
    Cache cache(file);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a directory"), std::string::npos) << e.what();
  }
}

TEST(Cache, PutThenGetAndHas) {
  TempDir dir;
  Cache cache(dir / "cache");
  Key key = Key::blob("sha256:" + kHexA);
  EXPECT_FALSE(cache.has(key));
  EXPECT_FALSE(cache.get(key));
  std::string source = dir.write("layer", test::pattern(200000));
  std::string path = cache.put(key, open_read(source).get());
  EXPECT_EQ(path, cache.root() + "/blobs/sha256/" + kHexA);
  EXPECT_TRUE(cache.has(key));
  ASSERT_TRUE(cache.get(key));
  EXPECT_EQ(capsa::test::read_file(*cache.get(key)), test::pattern(200000));
  std::vector<Entry> entries = cache.list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].type, EntryType::blob);
  EXPECT_EQ(entries[0].name, "sha256:" + kHexA);
  EXPECT_EQ(entries[0].size, 200000u);
  EXPECT_EQ(cache.total_size(), 200000u);

  // Present already: a second put keeps the first content.
  std::string other = dir.write("other", "different");
  cache.put(key, open_read(other).get());
  EXPECT_EQ(capsa::test::read_file(path), test::pattern(200000));
}

TEST(Cache, UseRecordsTheLastUse) {
  TempDir dir;
  Cache cache(dir / "cache");
  Key key = Key::blob("sha256:" + kHexA);
  std::string path = cache.put(key, open_read(dir.write("x", "x")).get());
  const timespec long_ago[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), long_ago, 0), 0);
  ASSERT_EQ(cache.list()[0].last_used, 1000000000);
  ASSERT_TRUE(cache.use(key));
  EXPECT_GT(cache.list()[0].last_used, 1000000000);
  EXPECT_EQ(cache.list()[0].created, 1000000000) << "a use is not a new creation";
}

TEST(Cache, AbandonedProductionKeepsThePartialAndFreesTheLock) {
  TempDir dir;
  Cache cache(dir / "cache");
  Key key = Key::sif("sha256:" + kHexA, "linux", "amd64");
  {
    std::optional<ProducerLock> lock = cache.begin_produce(key);
    ASSERT_TRUE(lock);
    EXPECT_TRUE(lock->exclusive());
    EXPECT_EQ(lock->partial_path(), cache.root() + "/sif/" + kHexA + "-linux-amd64.sif.partial");
    std::ofstream(lock->partial_path()) << "half";
  }  // the producer gives up (an exception in a pull)
  EXPECT_FALSE(cache.has(key));
  std::optional<ProducerLock> next = cache.begin_produce(key);
  ASSERT_TRUE(next) << "the lock was released";
  EXPECT_EQ(capsa::test::read_file(next->partial_path()), "half");
  next->discard_partial();
  std::ofstream(next->partial_path()) << "whole";
  EXPECT_EQ(next->publish(), cache.path_of(key));
  EXPECT_EQ(capsa::test::read_file(cache.path_of(key)), "whole");
  EXPECT_FALSE(cache.begin_produce(key)) << "published: nothing left to produce";
}

TEST(Cache, WaitOrProduceRunsTheProducerOnlyWhenMissing) {
  TempDir dir;
  Cache cache(dir / "cache");
  Key key = Key::blob("sha256:" + kHexB);
  int runs = 0;
  auto producer = [&](ProducerLock& lock) {
    ++runs;
    std::ofstream(lock.partial_path()) << "content";
  };
  EXPECT_EQ(test::read_all(cache.wait_or_produce(key, producer).fd()), "content");
  EXPECT_EQ(test::read_all(cache.wait_or_produce(key, producer).fd()), "content");
  EXPECT_EQ(runs, 1);
}

TEST(Cache, TwoRootsAreIsolated) {
  TempDir dir;
  Cache first(dir / "one");
  Cache second(dir / "two");
  Key key = Key::blob("sha256:" + kHexA);
  first.put(key, open_read(dir.write("x", "x")).get());
  EXPECT_TRUE(first.has(key));
  EXPECT_FALSE(second.has(key));
  EXPECT_TRUE(second.list().empty());
  // A producer in one root does not block the same key in the other.
  std::optional<ProducerLock> a = Cache(dir / "three").begin_produce(key);
  std::optional<ProducerLock> b = second.begin_produce(key);
  EXPECT_TRUE(a && b);
}

TEST(Key, PathsStayInsideTheCache) {
  EXPECT_EQ(Key::blob("sha256:" + kHexA).relative_path(), "blobs/sha256/" + kHexA);
  EXPECT_EQ(Key::blob("sha512:" + std::string(128, '0')).relative_path(), "blobs/sha512/" + std::string(128, '0'));
  EXPECT_EQ(Key::sif("sha256:" + kHexA, "linux", "arm64", "v8").relative_path(), "sif/" + kHexA + "-linux-arm64-v8.sif");
  EXPECT_EQ(Key::sif("sha256:" + kHexA, "linux", "amd64").name(), kHexA + "-linux-amd64");
  for (const std::string& bad : std::vector<std::string>{"sha256:../../etc/passwd", "sha256:" + std::string(64, 'A'), "sha256:abc", "md5:" + kHexA,
                                "sha256:" + kHexA + "/x", kHexA, ""})
    EXPECT_THROW(Key::blob(bad), FormatError) << bad;
  for (const std::string& bad : std::vector<std::string>{"", "../x", "a/b", "Linux", "a-b"}) {
    EXPECT_THROW(Key::sif("sha256:" + kHexA, bad, "amd64"), FormatError) << bad;
    EXPECT_THROW(Key::sif("sha256:" + kHexA, "linux", bad), FormatError) << bad;
  }
  EXPECT_THROW(Key::sif("sha256:" + kHexA, "linux", "arm", "../v7"), FormatError);
}

TEST(Key, FoundFilesMapBackToTheirKeys) {
  for (const Key& key : {Key::blob("sha256:" + kHexA), Key::sif("sha256:" + kHexA, "linux", "arm", "v7"),
                         Key::sif("sha512:" + std::string(128, 'f'), "linux", "amd64")}) {
    std::optional<Key> found = Key::from_relative_path(key.relative_path());
    ASSERT_TRUE(found) << key.relative_path();
    EXPECT_EQ(*found, key);
  }
  for (const char* other : {"blobs/sha256/xyz", "sif/readme.txt", "sif/" "aa-linux-amd64.sif", "tmp/x", "blobs/sha256"})
    EXPECT_FALSE(Key::from_relative_path(other)) << other;
}

TEST(Key, TypesAcceptApptainersNames) {
  EXPECT_EQ(parse_type("blob"), EntryType::blob);
  EXPECT_EQ(parse_type("blobs"), EntryType::blob);
  EXPECT_EQ(parse_type("sif"), EntryType::sif);
  EXPECT_EQ(parse_type("oci"), EntryType::sif);
  EXPECT_FALSE(parse_type("library"));
  EXPECT_FALSE(parse_type("all"));
}

TEST(Location, EnvironmentChoosesInApptainersOrder) {
  std::map<std::string, std::string> env;
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
  env["HOME"] = "/home/u";
  EXPECT_EQ(resolve_cache_location(lookup).root, "/home/u/.capsa/cache");
  EXPECT_EQ(resolve_cache_location(lookup).source, "default");
  env["SINGULARITY_CACHEDIR"] = "/scratch/s";
  EXPECT_EQ(resolve_cache_location(lookup).root, "/scratch/s/cache/capsa");
  env["APPTAINER_CACHEDIR"] = "/scratch/a";
  EXPECT_EQ(resolve_cache_location(lookup).root, "/scratch/a/cache/capsa");
  EXPECT_EQ(resolve_cache_location(lookup).source, "APPTAINER_CACHEDIR");
  env["CAPSA_CACHEDIR"] = "/scratch/c";
  EXPECT_EQ(resolve_cache_location(lookup).root, "/scratch/c");
  env["CAPSA_CACHEDIR"] = "";  // empty counts as unset, as in Apptainer
  EXPECT_EQ(resolve_cache_location(lookup).root, "/scratch/a/cache/capsa");
}

TEST(Materialize, CopiesAtomicallyWithTheRequestedMode) {
  TempDir dir;
  std::string source = dir.write("cached.sif", test::pattern(3 << 20));
  std::string out_dir = dir / "out";
  std::filesystem::create_directory(out_dir);
  std::string destination = out_dir + "/image.sif";
  materialize(open_read(source).get(), destination, 0755, /*replace=*/false);
  EXPECT_EQ(capsa::test::read_file(destination), test::pattern(3 << 20));
  EXPECT_EQ(mode_of(destination) & 0700, 0700u);

  // An existing output is refused without replace, kept intact, and no temporary stays.
  std::string before = capsa::test::read_file(destination);
  std::string small = dir.write("small", "small");
  EXPECT_THROW(materialize(open_read(small).get(), destination, 0755, false), SystemError);
  EXPECT_EQ(capsa::test::read_file(destination), before);
  materialize(open_read(small).get(), destination, 0755, /*replace=*/true);
  EXPECT_EQ(capsa::test::read_file(destination), "small");
  EXPECT_EQ(names_under(out_dir), std::vector<std::string>{"image.sif"});
}

}  // namespace
}  // namespace capsa::cache
