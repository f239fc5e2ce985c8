// `capsa build|pull|exec` of docker-archive:, oci-archive: and oci: images made by skopeo
// from the test registry's images, as users carry them to a cluster: each one becomes
// the SIF `pull docker://` makes of the same image, runs, goes through the cache once,
// and every bad input is one line, a non-zero exit, no output file and a sound cache.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sif/image.hpp"
#include "support/cache_check.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::archive {
namespace {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

class ArchiveImages : public ::testing::Test {
 protected:
  TempDir work;
  std::string cache = work / "cache";
  std::string tmp = work / "tmp";

  void SetUp() override {
    std::filesystem::create_directories(tmp);
    if (!test::have_program("skopeo")) GTEST_SKIP() << "skopeo is not installed";
  }

  ProcessResult capsa(std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {"env", "CAPSA_CACHEDIR=" + cache, "TMPDIR=" + tmp,
                                     "CAPSA_REGISTRY_CA=" + test::test_registry().ca_file};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(test::capsa_binary());
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, "", 600);
  }
  std::string docker(const std::string& repo) { return "docker://" + test::test_registry().plain + "/public/" + repo; }
  // skopeo copies the test registry's image `repo` to `destination` (docker-archive:FILE:NAME:TAG, ...).
  void skopeo(const std::string& repo, const std::string& destination, std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {
        "skopeo", "--insecure-policy", "copy", "--quiet", "--src-tls-verify=false", "--tmpdir", tmp};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {docker(repo), destination});
    auto copied = run_process(argv, "", 300);
    ASSERT_EQ(copied.exit_code, 0) << copied.err;
  }
  int cached_sifs() { return std::filesystem::exists(cache) ? test::check_cache(cache).sifs : 0; }
  void expect_sound_cache() {
    if (!std::filesystem::exists(cache)) return;
    auto check = test::check_cache(cache);
    EXPECT_TRUE(check.problems.empty()) << check.problems.front();
    EXPECT_TRUE(check.stale_temporaries.empty()) << check.stale_temporaries.front();
  }
};

// The root file system of a SIF with content hashes (tests/test_registries/tree-manifest.py),
// without /.singularity.d: its definition file and labels name the source.
std::string tree_of_sif(const std::string& sif, const TempDir& dir) {
  sif::Image image = sif::Image::open(sif);
  const std::string part = dir / "partition.squashfs";
  auto dump =
      run_process({"sh", "-c", "\"$0\" sif dump " + std::to_string(image.primary_partition()->id) + " \"$1\" > \"$2\"",
                   test::capsa_binary(), sif, part});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  auto listing = run_process({"sh", "-c", "sqfs2tar -r . \"$0\" | /usr/bin/python3 \"$1\"/tree-manifest.py --tar -",
                              part, test::test_registry().tools},
                             "", 300);
  EXPECT_EQ(listing.exit_code, 0) << listing.err;
  std::filesystem::remove(part);
  std::istringstream in(listing.out);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (!line.starts_with("./.singularity.d") && !line.starts_with(".singularity.d")) out += line + "\n";
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::size_t lines_of(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST_F(ArchiveImages, EachFormBuildsTheSifPullDockerMakesAndItRuns) {
  for (const std::string repo : {"busybox:1.0", "layers:latest"}) {
    SCOPED_TRACE(repo);
    const std::string name = repo.substr(0, repo.find(':'));
    std::string docker_archive = "docker-archive:" + (work / (name + "-docker.tar"));
    docker_archive += ":" + name;
    docker_archive += ":latest";
    skopeo(repo, docker_archive);
    skopeo(repo, "oci-archive:" + (work / (name + "-oci.tar")) + ":v1");
    skopeo(repo, "oci:" + (work / (name + "-layout")) + ":v1");

    const std::string pulled = work / (name + "-pulled.sif");
    auto pull = capsa({"pull", "--nohttps", pulled, docker(repo)});
    ASSERT_EQ(pull.exit_code, 0) << pull.err;
    const std::string reference = tree_of_sif(pulled, work);
    ASSERT_GT(lines_of(reference), 5u) << reference;

    for (const std::string& source :
         {"docker-archive:" + (work / (name + "-docker.tar")), "oci-archive:" + (work / (name + "-oci.tar")) + ":v1",
          "oci:" + (work / (name + "-layout"))}) {
      SCOPED_TRACE(source);
      const std::string sif = work / (name + "-built.sif");
      auto built = capsa({"build", "--force", sif, source});
      ASSERT_EQ(built.exit_code, 0) << built.err;
      EXPECT_EQ(tree_of_sif(sif, work), reference) << "the same root file system as pull docker://";
      // An OCI layout of the pulled image has its manifest digest: the cache gives back the
      // SIF pulled from docker:// (as Apptainer's oci-tmp cache does). A docker archive
      // has no manifest digest: its config digest keys a conversion of its own.
      auto inspect = capsa({"inspect", "--deffile", sif});
      const std::string bootstrap = source.starts_with("docker-archive:") ? "docker-archive" : "docker";
      EXPECT_NE(inspect.out.find("bootstrap: " + bootstrap + "\n"), std::string::npos) << inspect.out;
      if (name == "busybox") {
        auto run = capsa({"exec", sif, "cat", "/etc/passwd"});
        EXPECT_EQ(run.exit_code, 0) << run.err;
        EXPECT_NE(run.out.find("root:x:0:0"), std::string::npos) << run.out;
      }
    }
  }
  expect_sound_cache();
}

TEST_F(ArchiveImages, PullNamesTheOutputAsApptainerAndSandboxWorks) {
  skopeo("busybox:1.0", "docker-archive:" + (work / "bb.tar") + ":busybox:latest");
  skopeo("busybox:1.0", "oci:" + (work / "layout") + ":1.0");
  ASSERT_EQ(::chdir(work.path().c_str()), 0);
  auto first = capsa({"pull", "docker-archive:bb.tar"});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(exists(work / "bb.tar_latest.sif")) << first.err;
  auto named = capsa({"pull", "docker-archive://bb.tar:busybox:latest"});
  EXPECT_EQ(named.exit_code, 0) << named.err;
  EXPECT_TRUE(exists(work / "bb.tar_busybox.sif")) << named.err;
  std::filesystem::create_directories(work / "out");
  auto layout = capsa({"pull", "--dir", work / "out", "oci:layout:1.0"});
  EXPECT_EQ(layout.exit_code, 0) << layout.err;
  EXPECT_TRUE(exists(work / "out/layout_1.0.sif")) << layout.err;
  auto run = capsa({"exec", work / "out/layout_1.0.sif", "cat", "/etc/group"});
  EXPECT_NE(run.out.find("root:x:0:"), std::string::npos) << run.err;

  // `docker save | gzip`: decompressed to the cache's scratch, then read as the .tar.
  ASSERT_EQ(run_process({"gzip", "-k", work / "bb.tar"}).exit_code, 0);
  auto gzipped = capsa({"build", work / "gz.sif", "docker-archive:" + (work / "bb.tar.gz")});
  ASSERT_EQ(gzipped.exit_code, 0) << gzipped.err;
  EXPECT_EQ(tree_of_sif(work / "gz.sif", work), tree_of_sif(work / "bb.tar_latest.sif", work));
  EXPECT_TRUE(test::check_cache(cache).stale_temporaries.empty());

  auto sandbox = capsa({"build", "--sandbox", work / "box", "oci-archive:" + (work / "absent.tar")});
  EXPECT_NE(sandbox.exit_code, 0);
  EXPECT_FALSE(exists(work / "box"));
  sandbox = capsa({"build", "--sandbox", work / "box", "oci:" + (work / "layout")});
  EXPECT_EQ(sandbox.exit_code, 0) << sandbox.err;
  EXPECT_TRUE(exists(work / "box/bin/busybox")) << sandbox.err;
  ASSERT_EQ(::chdir("/"), 0);
}

TEST_F(ArchiveImages, ActionsConvertOnceThroughTheCache) {
  skopeo("busybox:1.0", "docker-archive:" + (work / "bb.tar") + ":busybox:latest");
  skopeo("busybox:1.0", "oci-archive:" + (work / "bb-oci.tar") + ":1.0");
  const std::string source = "docker-archive:" + (work / "bb.tar");
  auto first = capsa({"exec", source, "cat", "/etc/passwd"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("root:x:0:0"), std::string::npos) << first.out;
  EXPECT_EQ(cached_sifs(), 1);
  auto again = capsa({"run", source, "echo", "from the cache"}, {"CAPSA_MAX_UNPACKED_SIZE=1"});
  EXPECT_EQ(again.out, "from the cache\n") << "no second conversion (its limit would stop one): " << again.err;
  auto inspect = capsa({"inspect", "--deffile", source}, {"CAPSA_MAX_UNPACKED_SIZE=1"});
  EXPECT_NE(inspect.out.find("bootstrap: docker-archive\nfrom: " + (work / "bb.tar")), std::string::npos)
      << inspect.out << inspect.err;
  EXPECT_EQ(cached_sifs(), 1);
  auto shell = run_process({"env", "CAPSA_CACHEDIR=" + cache, "TMPDIR=" + tmp, test::capsa_binary(), "shell",
                            "oci-archive:" + (work / "bb-oci.tar") + ":1.0"},
                           "cat /etc/group\n", 600);
  EXPECT_NE(shell.out.find("root:x:0:"), std::string::npos) << shell.err;
  EXPECT_EQ(cached_sifs(), 2) << "another manifest, another entry";
  auto disabled = capsa({"exec", "--disable-cache", source, "true"});
  EXPECT_EQ(disabled.exit_code, 0) << disabled.err;
  EXPECT_EQ(cached_sifs(), 2);
  expect_sound_cache();
}

// The squashfs compression id of a SIF's primary partition (1 gzip, 6 zstd).
int compression_of(const std::string& sif_path) {
  sif::Image image = sif::Image::open(sif_path);
  std::ifstream in(sif_path, std::ios::binary);
  in.seekg(image.primary_partition()->offset + 20);
  unsigned char id[2] = {0, 0};
  in.read(reinterpret_cast<char*>(id), 2);
  return id[0] | (id[1] << 8);
}

TEST_F(ArchiveImages, CompressionIsTheOneAskedForWhateverTheCacheHolds) {
  // The cache's first SIF is zstd; another --compression is an entry of its own, which
  // build and pull share.
  skopeo("busybox:1.0", "oci:" + (work / "layout") + ":1.0");
  const std::string source = "oci:" + (work / "layout") + ":1.0";
  ASSERT_EQ(capsa({"pull", "-q", work / "zstd.sif", source}).exit_code, 0);
  for (const std::string command : {"build", "pull"}) {
    const std::string out = work / (command + "-gzip.sif");
    auto made = capsa({command, "-q", "--compression", "gzip", out, source});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    EXPECT_EQ(compression_of(out), 1) << command;
  }
  EXPECT_EQ(compression_of(work / "zstd.sif"), 6);
  EXPECT_EQ(cached_sifs(), 2) << "one entry per compression";
  expect_sound_cache();
}

TEST_F(ArchiveImages, DefinitionFilesBootstrapFromEachForm) {
  skopeo("busybox:1.0", "docker-archive:" + (work / "bb.tar") + ":busybox:latest");
  skopeo("busybox:1.0", "oci-archive:" + (work / "bb-oci.tar") + ":1.0");
  skopeo("busybox:1.0", "oci:" + (work / "layout") + ":1.0");
  for (const auto& [agent, from] :
       std::vector<std::pair<std::string, std::string>>{{"docker-archive", work / "bb.tar"},
                                                        {"oci-archive", (work / "bb-oci.tar") + ":1.0"},
                                                        {"oci", work / "layout"}}) {
    SCOPED_TRACE(agent);
    std::string text = "Bootstrap: " + agent;
    text += "\nFrom: " + from;
    text += "\n\n%post\n  echo built-from-" + agent;
    text += " > /marker\n";
    const std::string def = work.write(agent + ".def", text);
    const std::string sif = work / (agent + ".sif");
    auto built = capsa({"build", sif, def});
    ASSERT_EQ(built.exit_code, 0) << built.err;
    auto run = capsa({"exec", sif, "cat", "/marker"});
    EXPECT_EQ(run.out, "built-from-" + agent + "\n") << run.err;
  }
  // Bootstrap: oras starts from a SIF in a registry: the one just built, pushed.
  const std::string repo = test::test_registry().plain + "/archive-oras-" + std::to_string(::geteuid()) + ":1.0";
  auto pushed = capsa({"push", "--nohttps", work / "oci.sif", "oras://" + repo});
  ASSERT_EQ(pushed.exit_code, 0) << pushed.err;
  const std::string oras_def =
      work.write("oras.def", "Bootstrap: oras\nFrom: " + repo + "\n\n%post\n  echo again >> /marker\n");
  auto from_oras = capsa({"build", work / "oras.sif", oras_def}, {"APPTAINER_NOHTTPS=1"});
  ASSERT_EQ(from_oras.exit_code, 0) << from_oras.err;
  auto marker = capsa({"exec", work / "oras.sif", "cat", "/marker"});
  EXPECT_EQ(marker.out, "built-from-oci\nagain\n") << marker.err;

  const std::string bad = work.write("bad.def", "Bootstrap: oci-archive\n\n%post\n  true\n");
  auto refused = capsa({"build", work / "bad.sif", bad});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("Bootstrap: oci-archive needs a From: header"), std::string::npos) << refused.err;
}

// The bad inputs: each one line naming the file and the trouble, a failure, no output
// left, and a cache with no half-made entry.
class ArchiveBadInput : public ArchiveImages {
 protected:
  void expect_refused(const std::string& source, const std::string& words) {
    SCOPED_TRACE(source);
    const int before = cached_sifs();
    const std::string out = work / "out.sif";
    for (const std::string command : {"pull", "build"}) {
      auto result = capsa({command, "-q", out, source});
      EXPECT_NE(result.exit_code, 0) << command;
      EXPECT_NE(result.err.find(words), std::string::npos) << command << ": " << result.err;
      EXPECT_EQ(lines_of(result.err), 1u) << command << ": " << result.err;
      EXPECT_FALSE(exists(out)) << command << ": no partial output";
    }
    auto exec = capsa({"exec", source, "true"});
    EXPECT_NE(exec.exit_code, 0);
    EXPECT_NE(exec.err.find(words), std::string::npos) << exec.err;
    EXPECT_EQ(cached_sifs(), before) << "no entry for what failed";
    expect_sound_cache();
  }
};

TEST_F(ArchiveBadInput, MissingFilesAndWrongFormats) {
  expect_refused("docker-archive:" + (work / "absent.tar"), "absent.tar: No such file or directory");
  expect_refused("oci:" + (work / "absent"), "absent: No such file or directory");
  const std::string text = work.write("notes.txt", "not an image, just some words in a file\n");
  expect_refused("docker-archive:" + text, "notes.txt: not a tar archive");
  expect_refused("oci-archive:" + text, "notes.txt: not a tar archive");
  std::filesystem::create_directories(work / "empty");
  expect_refused("oci:" + (work / "empty"), "not an OCI image layout (it has no oci-layout file)");
  skopeo("busybox:1.0", "docker-archive:" + (work / "bb.tar") + ":busybox:latest");
  expect_refused("oci-archive:" + (work / "bb.tar"), "a docker archive, not an OCI layout; use docker-archive:");
  expect_refused("oci:" + (work / "bb.tar"), "not a directory");
  // gzip, zstd and xz are read (below); other compressions are named.
  ASSERT_EQ(run_process({"bzip2", "-k", work / "bb.tar"}).exit_code, 0);
  expect_refused("docker-archive:" + (work / "bb.tar.bz2"), "a compressed archive (bzip2); decompress it first");
}

TEST_F(ArchiveBadInput, SeveralImagesNeedANameAndAnAbsentNameIsNamed) {
  // Two images in one OCI layout (skopeo adds the second to index.json), then as a tar.
  skopeo("busybox:1.0", "oci:" + (work / "two") + ":bb");
  skopeo("layers:latest", "oci:" + (work / "two") + ":layers");
  auto tarred = run_process({"tar", "-C", work / "two", "-cf", work / "two.tar", "."});
  ASSERT_EQ(tarred.exit_code, 0) << tarred.err;
  expect_refused("oci:" + (work / "two"),
                 "holds 2 images; name one as oci:" + (work / "two") + ":TAG, TAG one of: bb, layers");
  expect_refused("oci-archive:" + (work / "two.tar"), "TAG one of: bb, layers");
  expect_refused("oci:" + (work / "two") + ":nope", "no image tagged \"nope\" in it; it holds: bb, layers");
  auto chosen = capsa({"build", work / "chosen.sif", "oci-archive:" + (work / "two.tar") + ":bb"});
  EXPECT_EQ(chosen.exit_code, 0) << chosen.err;

  // Two `docker save` archives merged into one, as `docker save a b` writes it.
  skopeo("busybox:1.0", "docker-archive:" + (work / "a.tar") + ":busybox:latest");
  skopeo("layers:latest", "docker-archive:" + (work / "b.tar") + ":example/layers:2");
  std::filesystem::create_directories(work / "merged");
  for (const char* part : {"a.tar", "b.tar"})
    ASSERT_EQ(run_process({"tar", "-C", work / "merged", "-xf", work / part}).exit_code, 0);
  auto merge =
      run_process({"python3", "-c",
                   "import json,subprocess,sys\n"
                   "m=[json.loads(subprocess.run(['tar','-xOf',f,'manifest.json'],capture_output=True).stdout)[0] "
                   "for f in sys.argv[2:]]\n"
                   "import os\n"
                   "os.remove(sys.argv[1]+'/manifest.json')\n"  // skopeo's files are read-only
                   "open(sys.argv[1]+'/manifest.json','w').write(json.dumps(m))\n",
                   work / "merged", work / "a.tar", work / "b.tar"});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  ASSERT_EQ(run_process({"tar", "-C", work / "merged", "-cf", work / "ab.tar", "."}).exit_code, 0);
  expect_refused("docker-archive:" + (work / "ab.tar"),
                 "holds 2 images; name one as docker-archive:" + (work / "ab.tar") +
                     ":NAME:TAG (or :@N), one of: docker.io/library/busybox:latest, docker.io/example/layers:2");
  expect_refused("docker-archive:" + (work / "ab.tar") + ":alpine:3", "no image named \"alpine:3\" in it");
  auto by_name = capsa({"build", work / "by-name.sif", "docker-archive:" + (work / "ab.tar") + ":busybox"});
  EXPECT_EQ(by_name.exit_code, 0) << by_name.err;
  auto by_index = capsa({"build", work / "by-index.sif", "docker-archive:" + (work / "ab.tar") + ":@1"});
  EXPECT_EQ(by_index.exit_code, 0) << by_index.err;
}

void flip_byte_at(const std::string& path, std::size_t at) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(at));
  const char byte = static_cast<char>(file.get());
  file.seekp(static_cast<std::streamoff>(at));
  file.put(static_cast<char>(byte ^ 0x20));
  ASSERT_TRUE(file.good()) << path;
}

std::size_t offset_of(const std::string& path, const std::string& marker) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream all;
  all << file.rdbuf();
  return all.str().find(marker);
}

TEST_F(ArchiveBadInput, ALayerThatDiffersFromItsDigestIsRefused) {
  // The gzip header's time stamp (bytes 4-7) is outside every checksum but the digest: the
  // layer still decompresses to the same tar, of the same size, and only its sha256 tells.
  skopeo("busybox:1.0", "oci:" + (work / "layout") + ":1.0");
  std::string biggest;
  std::uintmax_t size = 0;
  for (const auto& blob : std::filesystem::directory_iterator(work / "layout/blobs/sha256"))
    if (blob.file_size() > size) size = blob.file_size(), biggest = blob.path();
  flip_byte_at(biggest, 5);
  expect_refused("oci:" + (work / "layout"), "but the manifest says sha256:");

  // A docker archive's layers are plain tars: one byte of /etc/passwd changed in one.
  skopeo("busybox:1.0", "docker-archive:" + (work / "bb.tar") + ":busybox:latest");
  const std::size_t at = offset_of(work / "bb.tar", "root:x:0:0");
  ASSERT_NE(at, std::string::npos);
  flip_byte_at(work / "bb.tar", at);
  expect_refused("docker-archive:" + (work / "bb.tar"), "but the image config says sha256:");
}

}  // namespace
}  // namespace capsa::archive
