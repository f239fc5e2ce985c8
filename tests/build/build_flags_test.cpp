// `capsa build --json`, `--mksquashfs-args`, `--writable-tmpfs`, `--nvccli`, `--mount`,
// `--no-cleanup` and the fakeroot fall-backs (`--ignore-subuid`, `--ignore-fakeroot-command`,
// `--ignore-userns`) end to end, as root and as the unprivileged test user (whose builds
// run in a user namespace).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "build_fixture.hpp"
#include "sif/image.hpp"
#include "support/process.hpp"

namespace capsa::build {
namespace {

namespace fs = std::filesystem;

int lines_of(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST_F(Build, JsonBuildsApptainersJsonFormOfADefinition) {
  const std::string json = def("recipe.json", R"({
    "header": {"bootstrap": "docker", "from": ")" +
                                                  registry("public/busybox:1.0") + R"("},
    "imageData": {
      "labels": {"Flavour": "json"},
      "imageScripts": {"runScript": {"args": "", "script": "    echo \"from json: $(cat /made)\"\n"},
                       "test": {"args": "", "script": "    test -f /made && echo json-test-passed\n"}}},
    "buildData": {"buildScripts": {"post": {"args": "", "script": "    echo {{ WORD }} > /made\n"}}}
  })");
  const std::string sif = work / "json.sif";
  auto built = capsa({"build", "--json", "--build-arg", "WORD=parsed", sif, json});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.out.find("json-test-passed"), std::string::npos) << built.out << built.err;
  EXPECT_EQ(capsa({"run", sif}).out, "from json: parsed\n");
  EXPECT_NE(capsa({"inspect", "--labels", sif}).out.find("Flavour: json"), std::string::npos);
  // The image keeps the definition's text form.
  auto deffile = capsa({"inspect", "--deffile", sif});
  EXPECT_EQ(deffile.out.rfind("bootstrap: docker\n", 0), 0u) << deffile.out;
  EXPECT_NE(deffile.out.find("%post\n    echo parsed > /made\n"), std::string::npos) << deffile.out;
  // APPTAINER_JSON says the same as --json.
  auto from_env = capsa({"build", "-T", "--build-arg", "WORD=env", work / "env.sif", json}, {"APPTAINER_JSON=1"});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(capsa({"run", work / "env.sif"}).out, "from json: env\n");

  // Bad JSON: one line naming the file and the fault; nothing written, nothing left.
  const std::string bad = def("bad.json", "{\"header\": {\"bootstrap\": \"docker\",\n");
  auto refused = capsa({"build", "--json", work / "bad.sif", bad});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(lines_of(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find(bad + ": not valid JSON ("), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(work / "bad.sif"));
  EXPECT_TRUE(leftovers().empty());
  // A text definition is not JSON, and --json needs a definition file.
  const std::string text = def("text.def", "Bootstrap: docker\nFrom: busybox\n");
  EXPECT_NE(capsa({"build", "--json", work / "t.sif", text}).err.find("not valid JSON"), std::string::npos);
  auto docker = capsa({"build", "--json", work / "d.sif", "docker://" + registry("public/busybox:1.0")});
  EXPECT_EQ(docker.exit_code, 1);
  EXPECT_NE(docker.err.find("--json reads a definition file"), std::string::npos) << docker.err;
}

// The SIF's squashfs partition, as `unsquashfs -s` (independent of capsa) reads its super block.
std::string squashfs_super_block(const std::string& sif, const std::string& dir, ProcessResult* listing = nullptr) {
  sif::Image image = sif::Image::open(sif);
  const std::string part = dir + "/partition.squashfs";
  run_process({"sh", "-c", "\"$0\" sif dump " + std::to_string(image.primary_partition()->id) + " \"$1\" > \"$2\"",
               test::capsa_binary(), sif, part});
  if (listing != nullptr) *listing = run_process({"unsquashfs", "-lln", "-d", "", part}, "", 300);
  auto super = run_process({"unsquashfs", "-s", part});
  fs::remove(part);
  return super.out;
}

TEST_F(Build, MksquashfsArgsChooseCompressionBlockSizeAndOwners) {
  const std::string recipe = def("owned.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") +
                                                  "\n%post\n    mkdir /data && chown 1234:5678 /data\n");
  const std::string sif = work / "packed.sif";
  auto built = capsa({"build", "--mksquashfs-args", "-noappend -comp gzip -b 64K -processors 1 -mem 1G", sif, recipe});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  std::string super = squashfs_super_block(sif, work.path());
  EXPECT_NE(super.find("Compression gzip"), std::string::npos) << super;
  EXPECT_NE(super.find("Block size 65536"), std::string::npos) << super;
  EXPECT_EQ(capsa({"exec", sif, "ls", "-d", "/data"}).out, "/data\n") << "the image runs";

  // -all-root, from the environment (APPTAINER_MKSQUASHFS_ARGS), on a docker:// source too:
  // repacked rather than pulled as it is.
  const std::string root_owned = work / "root-owned.sif";
  auto all_root = capsa({"build", root_owned, recipe}, {"APPTAINER_MKSQUASHFS_ARGS=-all-root -comp xz"});
  ASSERT_EQ(all_root.exit_code, 0) << all_root.err;
  ProcessResult listing;
  super = squashfs_super_block(root_owned, work.path(), &listing);
  EXPECT_NE(super.find("Compression xz"), std::string::npos) << super;
  EXPECT_EQ(owner_of(listing.out, "/data"), "0/0") << listing.out;
  auto docker = capsa(
      {"build", "--mksquashfs-args", "-comp gzip", work / "docker.sif", "docker://" + registry("public/busybox:1.0")});
  ASSERT_EQ(docker.exit_code, 0) << docker.err;
  EXPECT_NE(squashfs_super_block(work / "docker.sif", work.path()).find("Compression gzip"), std::string::npos);

  // Any other mksquashfs option: one line naming it, before anything is fetched.
  auto refused = capsa({"build", "--mksquashfs-args", "-comp gzip -e /proc", work / "never.sif", recipe});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(lines_of(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find("--mksquashfs-args: mksquashfs option -e is not supported"), std::string::npos)
      << refused.err;
  EXPECT_FALSE(fs::exists(work / "never.sif"));
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(Build, WritableTmpfsLetsTestWriteWithoutChangingTheImage) {
  const std::string recipe = def("writes.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") +
                                                   "\n%test\n    touch /test-wrote && echo test-could-write\n");
  // Without it %test sees the image read-only, as `capsa test` sees a sandbox.
  auto read_only = capsa({"build", work / "read-only.sif", recipe});
  EXPECT_NE(read_only.exit_code, 0);
  EXPECT_NE(read_only.err.find("Read-only file system"), std::string::npos) << read_only.err;
  EXPECT_NE(read_only.err.find("%test failed"), std::string::npos) << read_only.err;
  EXPECT_FALSE(fs::exists(work / "read-only.sif"));

  const std::string sandbox = work / "out/sandbox";
  fs::create_directories(work / "out");
  auto writable = capsa({"build", "--sandbox", "--writable-tmpfs", sandbox, recipe});
  ASSERT_EQ(writable.exit_code, 0) << writable.err;
  EXPECT_NE(writable.out.find("test-could-write"), std::string::npos) << writable.out;
  EXPECT_TRUE(fs::exists(sandbox + "/bin/busybox"));
  EXPECT_FALSE(fs::exists(sandbox + "/test-wrote")) << "the tmpfs went with %test";
  for (const auto& entry : fs::directory_iterator(work / "out"))
    EXPECT_EQ(entry.path().filename(), "sandbox") << "left beside the sandbox: " << entry.path();

  // An administrator's `enable overlay = no` forbids it, as for the actions.
  const std::string conf = work.write("no-overlay.conf", "enable overlay = no\n");
  auto forbidden = capsa({"-c", conf, "build", "--writable-tmpfs", work / "forbidden.sif", recipe});
  EXPECT_EQ(forbidden.exit_code, 1);
  EXPECT_EQ(lines_of(forbidden.err), 1) << forbidden.err;
  EXPECT_NE(forbidden.err.find("--writable-tmpfs: not allowed by the administrator (`enable overlay = no`"),
            std::string::npos)
      << forbidden.err;
  EXPECT_FALSE(fs::exists(work / "forbidden.sif"));

  auto from_env = capsa({"build", work / "env.sif", recipe}, {"APPTAINER_WRITABLE_TMPFS=1"});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(capsa({"exec", work / "env.sif", "ls", "/test-wrote"}).exit_code, 1) << "not in the image";
  EXPECT_TRUE(leftovers().empty());
}

// nvidia-container-cli cannot be installed here: a stand-in records how capsa calls it
// and writes into the root it is given, as the real one binds the driver files there.
TEST_F(Build, NvccliSetsTheDriverUpForPostAndTest) {
  fs::create_directories(work / "bin");
  const std::string cli =
      work.write("bin/nvidia-container-cli", "#!/bin/sh\nfor root; do :; done\necho \"$*\" > \"$root/nvccli-args\"\n");
  fs::permissions(cli, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);
  const std::string path = "PATH=" + (work / "bin") + ":/usr/sbin:/usr/bin:/sbin:/bin";
  const std::string recipe = def("gpu.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") +
                                                "\n%post\n    cp /nvccli-args /post-saw\n"
                                                "%test\n    echo \"test saw: $(cat /nvccli-args)\"\n");
  const std::string sandbox = work / "gpu";
  auto built = capsa({"build", "--nv", "--nvccli", "--sandbox", sandbox, recipe}, {path});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  const std::string post_saw = test::read_file(sandbox + "/post-saw");
  EXPECT_NE(post_saw.find("configure --no-cgroups --device=all --compute --utility"), std::string::npos) << post_saw;
  EXPECT_EQ(post_saw.find("--user") != std::string::npos, !is_root())
      << "unprivileged builds run it in their user namespace: " << post_saw;
  EXPECT_NE(built.out.find("test saw: "), std::string::npos) << built.out << built.err;
  EXPECT_NE(built.out.find("configure --no-cgroups"), std::string::npos) << "%test's read-only root got a tmpfs";

  // Without the tool: the actions' line, before anything is fetched.
  auto missing = capsa({"build", "--nvccli", work / "never.sif", recipe}, {"PATH=/usr/sbin:/usr/bin:/sbin:/bin"});
  if (test::run_process({"sh", "-c", "command -v nvidia-container-cli"}).out.empty()) {
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_EQ(lines_of(missing.err), 1) << missing.err;
    EXPECT_NE(missing.err.find("--nvccli needs nvidia-container-cli on PATH"), std::string::npos) << missing.err;
  }
  EXPECT_FALSE(fs::exists(work / "never.sif"));
  EXPECT_TRUE(leftovers().empty());
}

// --mount: the actions' Docker-style spec, bound for %post and %test (APPTAINER_MOUNT too);
// a bad spec is one line, before anything is fetched.
TEST_F(Build, MountBindsAHostDirectoryForPostAndTest) {
  fs::create_directories(work / "host-data");
  work.write("host-data/value", "mounted\n");
  const std::string recipe = def("mount.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") +
                                                  "\n%post\n    cp /host-mnt/value /copied\n"
                                                  "%test\n    grep -q mounted /host-mnt/value && echo mount-seen\n"
                                                  "    ! touch /host-mnt/new 2>/dev/null && echo mount-read-only\n");
  const std::string spec = "type=bind,src=" + (work / "host-data") + ",dst=/host-mnt,ro";
  const std::string sif = work / "mount.sif";
  auto built = capsa({"build", "--mount", spec, sif, recipe});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.out.find("mount-seen"), std::string::npos) << built.out << built.err;
  EXPECT_NE(built.out.find("mount-read-only"), std::string::npos) << built.out << built.err;
  EXPECT_EQ(capsa({"exec", sif, "cat", "/copied"}).out, "mounted\n");
  EXPECT_FALSE(fs::exists(work / "host-data/new"));
  auto from_env = capsa({"build", "-T", work / "env.sif", recipe}, {"APPTAINER_MOUNT=" + spec});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(capsa({"exec", work / "env.sif", "cat", "/copied"}).out, "mounted\n");

  auto bad = capsa({"build", "--mount", "type=volume,src=x,dst=/y", work / "never.sif", recipe});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(lines_of(bad.err), 1) << bad.err;
  EXPECT_FALSE(fs::exists(work / "never.sif"));
  EXPECT_TRUE(leftovers().empty());
}

// --no-cleanup keeps the build directory, failed or not, and says where; without it a
// failed build leaves nothing.
TEST_F(Build, NoCleanupKeepsTheBuildDirectoryAndSaysWhere) {
  const std::string recipe = def("fails.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") +
                                                  "\n%post\n    echo left > /evidence\n    exit 3\n");
  // Emulated for the test user: what stays is theirs to look at and remove.
  const std::vector<std::string> env = {"CAPSA_FAKEROOT_MODE=emulated"};
  auto failed = capsa({"build", work / "never.sif", recipe}, env);
  EXPECT_EQ(failed.exit_code, 3) << failed.err;
  EXPECT_TRUE(leftovers().empty());

  auto kept = capsa({"build", "--no-cleanup", work / "never.sif", recipe}, env);
  EXPECT_EQ(kept.exit_code, 3) << kept.err;
  const std::string marker = "build directory kept at: ";
  const auto at = kept.err.find(marker);
  ASSERT_NE(at, std::string::npos) << kept.err;
  const std::string dir = kept.err.substr(at + marker.size(), kept.err.find('\n', at) - at - marker.size());
  EXPECT_EQ(dir.rfind(tmp + "/capsa-build-", 0), 0u) << dir;
  EXPECT_EQ(test::read_file(dir + "/stage-0/evidence"), "left\n");  // the first stage's root
  EXPECT_FALSE(fs::exists(work / "never.sif"));
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  const std::size_t before = leftovers().size();

  const std::string works = def("works.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") + "\n");
  auto built = capsa({"build", work / "built.sif", works}, {"APPTAINER_NO_CLEANUP=1", env[0]});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.err.find(marker + tmp + "/capsa-build-"), std::string::npos) << built.err;
  EXPECT_EQ(leftovers().size(), before + 1);
}

// Apptainer's fall-backs, seen through chown in %post: the emulated mode (--ignore-subuid)
// makes it succeed without effect, the mode without emulation (--ignore-fakeroot-command)
// fails it (only uid 0 is mapped), and real root (root's --ignore-userns) really does it.
TEST_F(Build, IgnoreFlagsChooseTheFakerootFallBack) {
  const std::string recipe = def("chown.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") +
                                                  "\n%post\n    id -u > /uid\n"
                                                  "    if chown 1234:1234 /uid; then echo chowned; else echo refused; "
                                                  "fi > /chown\n");
  auto result_of = [&](const std::vector<std::string>& flags, const std::string& name) {
    std::vector<std::string> args = {"build"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {work / name, recipe});
    auto built = capsa(args);
    EXPECT_EQ(built.exit_code, 0) << name << ": " << built.err;
    return capsa({"exec", work / name, "sh", "-c", "cat /uid /chown; stat -c %u /uid"}).out;
  };
  // The image records /uid as root's, which an unprivileged exec shows as nobody's.
  const std::string root_owned = is_root() ? "0\n" : "65534\n";
  EXPECT_EQ(result_of({"--fakeroot", "--ignore-subuid"}, "emulated.sif"), "0\nchowned\n" + root_owned);
  EXPECT_EQ(result_of({"--fakeroot", "--ignore-subuid", "--ignore-fakeroot-command"}, "single.sif"),
            "0\nrefused\n" + root_owned);
  auto env_single = capsa({"build", "--fakeroot", work / "env.sif", recipe},
                          {"APPTAINER_IGNORE_SUBUID=1", "APPTAINER_IGNORE_FAKEROOT_COMMAND=1"});
  EXPECT_EQ(env_single.exit_code, 0) << env_single.err;
  EXPECT_EQ(capsa({"exec", work / "env.sif", "cat", "/chown"}).out, "refused\n");
  if (is_root()) {
    EXPECT_EQ(result_of({"--fakeroot", "--ignore-userns"}, "real.sif"), "0\nchowned\n1234\n");
  } else {
    auto refused = capsa({"build", "--ignore-userns", work / "never.sif", recipe});
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_EQ(lines_of(refused.err), 1) << refused.err;
    EXPECT_NE(refused.err.find("--ignore-userns: an unprivileged build needs a user namespace"), std::string::npos)
        << refused.err;
    EXPECT_FALSE(fs::exists(work / "never.sif"));
  }
  EXPECT_TRUE(leftovers().empty());
}

}  // namespace
}  // namespace capsa::build
