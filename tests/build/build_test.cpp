// `capsa build` end to end, as root (real root) and as the unprivileged test user
// (--fakeroot semantics: subuid/subgid ranges, and root emulation with
// CAPSA_FAKEROOT_MODE=emulated), against the real test registry and the Debian mirror this
// machine is configured with. Images are checked from the outside: siftool, the squashfs
// listing (owners), `capsa inspect`, and running them.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "build_fixture.hpp"
#include "sif/image.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "support/test_registry.hpp"

namespace capsa::build {
namespace {

using test::ProcessResult;
using test::run_process;
using test::TempDir;

TEST_F(Build, EverySectionEndsUpWhereApptainerPutsIt) {
  std::string data = work.write("data.txt", "from the host\n");
  std::string recipe = def("sections.def",
      "Bootstrap: docker\n"
      "From: " + registry("public/busybox:1.0") + "\n"
      "\n"
      "%arguments\n"
      "    GREETING=hello\n"
      "%setup\n"
      "    touch \"$APPTAINER_ROOTFS/setup-ran\"\n"
      "%files\n"
      "    " + data + " /opt/data.txt\n"
      "%post\n"
      "    echo 'export FROM_POST=post-value' >> \"$APPTAINER_ENVIRONMENT\"\n"
      "    mkdir -p /opt/made && echo {{ GREETING }} > /opt/made/by-post\n"
      "%environment\n"
      "    export FROM_ENVIRONMENT={{ GREETING }}-env\n"
      "%runscript\n"
      "    echo \"runscript says $FROM_ENVIRONMENT $*\"\n"
      "%startscript\n"
      "    echo started\n"
      "%test\n"
      "    test -f /setup-ran && test -f /opt/made/by-post\n"
      "    echo test-passed\n"
      "%labels\n"
      "    Maintainer The capsa tests\n"
      "%help\n"
      "    This image proves the sections.\n");
  std::string sif = work / "sections.sif";
  auto built = capsa({"build", "--build-arg", "GREETING=bonjour", sif, recipe});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.out.find("test-passed"), std::string::npos) << built.out << built.err;  // %test ran at the end
  EXPECT_TRUE(leftovers().empty());

  auto siftool = run_process({"siftool", "list", sif});
  ASSERT_EQ(siftool.exit_code, 0) << siftool.err;
  EXPECT_NE(siftool.out.find("Def.FILE"), std::string::npos) << siftool.out;
  EXPECT_NE(siftool.out.find("JSON.Generic"), std::string::npos) << siftool.out;
  EXPECT_NE(siftool.out.find("FS (Squashfs/*System/amd64)"), std::string::npos) << siftool.out;

  auto run = capsa({"run", sif, "arg1"});
  EXPECT_EQ(run.out, "runscript says bonjour-env arg1\n") << run.err;
  auto env = capsa({"exec", sif, "sh", "-c", "echo $FROM_POST $FROM_ENVIRONMENT; cat /opt/made/by-post /opt/data.txt"});
  EXPECT_EQ(env.out, "post-value bonjour-env\nbonjour\nfrom the host\n") << env.err;
  auto test = capsa({"test", sif});
  EXPECT_EQ(test.exit_code, 0) << test.err;
  EXPECT_NE(test.out.find("test-passed"), std::string::npos) << test.out << test.err;

  auto labels = capsa({"inspect", "--labels", sif});
  EXPECT_NE(labels.out.find("Maintainer: The capsa tests"), std::string::npos) << labels.out;
  EXPECT_NE(labels.out.find("org.label-schema.usage.singularity.deffile.bootstrap: docker"), std::string::npos)
      << labels.out;
  EXPECT_NE(labels.out.find("org.opencontainers.image.base.name: " + registry("public/busybox:1.0")), std::string::npos)
      << labels.out;
  auto deffile = capsa({"inspect", "--deffile", sif});
  EXPECT_NE(deffile.out.find("echo bonjour > /opt/made/by-post"), std::string::npos) << deffile.out;
  auto runscript = capsa({"inspect", "--runscript", sif});
  EXPECT_NE(runscript.out.find("#!/bin/sh\n\n    echo \"runscript says"), std::string::npos) << runscript.out;
  auto test_script = capsa({"inspect", "--test", sif});
  EXPECT_NE(test_script.out.find("echo test-passed"), std::string::npos) << test_script.out;
  auto environment = capsa({"inspect", "--environment", sif});
  EXPECT_NE(environment.out.find("export FROM_ENVIRONMENT=bonjour-env"), std::string::npos) << environment.out;
  EXPECT_NE(environment.out.find("export FROM_POST=post-value"), std::string::npos) << environment.out;
  auto help = capsa({"inspect", "--helpfile", sif});
  EXPECT_NE(help.out.find("This image proves the sections."), std::string::npos) << help.out;

  // Root stays root: what %setup, %files and %post made belongs to root inside.
  std::string listing = squashfs_listing(sif, work);
  EXPECT_EQ(owner_of(listing, "/setup-ran"), "0/0") << listing;
  EXPECT_EQ(owner_of(listing, "/opt/data.txt"), "0/0") << listing;
  EXPECT_EQ(owner_of(listing, "/opt/made/by-post"), "0/0") << listing;
  EXPECT_EQ(owner_of(listing, "/.singularity.d/Singularity"), "0/0") << listing;
}

TEST_F(Build, ClusterRecipeInstallsADebianPackage) {
  // The cluster guides' recipe (NGC image + pip) with the local registry's Debian image and apt.
  std::string recipe = def("recipe.def",
      "BootStrap: docker\n"
      "From: " + registry("public/debian:bookworm") + "\n"
      "Stage: build\n"
      "\n"
      "%post\n"
      "    . /.singularity.d/env/10-docker*.sh\n"
      "    apt-get update -q\n"
      "    apt-get install -y -q --no-install-recommends hello\n"
      "    rm -rf /var/lib/apt/lists/*\n"
      "\n"
      "%runscript\n"
      "    exec hello \"$@\"\n");
  std::string sif = work / "recipe.sif";
  auto built = build_with_apt(sif, recipe);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_TRUE(leftovers().empty());
  auto run = capsa({"run", sif});
  EXPECT_EQ(run.out, "Hello, world!\n") << run.err;
  std::string listing = squashfs_listing(sif, work);
  EXPECT_EQ(owner_of(listing, "/usr/bin/hello"), "0/0") << listing;
  // apt's own user (_apt, uid 42) keeps its directory: ids other than root survive too.
  EXPECT_EQ(owner_of(listing, "/var/cache/apt/archives/partial").rfind("42/", 0), 0u) << listing;
}

TEST_F(Build, ClusterRecipeWithEmulatedRoot) {
  if (is_root()) GTEST_SKIP() << "root builds as real root";
  std::string recipe = def("recipe.def",
      "Bootstrap: docker\nFrom: " + registry("public/debian:bookworm") + "\n"
      "%post\n    apt-get update -q\n    apt-get install -y -q --no-install-recommends hello\n");
  std::string sif = work / "emulated.sif";
  auto built = build_with_apt(sif, recipe, {"CAPSA_FAKEROOT_MODE=emulated"});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_NE(built.err.find("fakeroot (emulated)"), std::string::npos) << built.err;
  auto run = capsa({"exec", sif, "hello"});
  EXPECT_EQ(run.out, "Hello, world!\n") << run.err;
  EXPECT_EQ(owner_of(squashfs_listing(sif, work), "/usr/bin/hello"), "0/0");
}

TEST_F(Build, TwoStagesCopyOnlyTheCompiledProgram) {
  std::string recipe = def("two-stage.def",
      "Bootstrap: docker\n"
      "From: " + registry("public/debian:bookworm") + "\n"
      "Stage: compile\n"
      "%post -c /bin/bash\n"
      "    set -o pipefail  # bash only: proves -c chose the shell\n"
      "    apt-get update -q\n"
      "    apt-get install -y -q --no-install-recommends gcc libc6-dev\n"
      "    printf '#include <stdio.h>\\nint main(void) { puts(\"built in stage one\"); return 0; }\\n' > /hello.c\n"
      "    gcc -static -O2 -o /usr/local/bin/hello-static /hello.c\n"
      "\n"
      "Bootstrap: docker\n"
      "From: " + registry("public/busybox:1.0") + "\n"
      "Stage: final\n"
      "%files from compile\n"
      "    /usr/local/bin/hello-static /usr/bin/hello-static\n"
      "%runscript\n"
      "    exec /usr/bin/hello-static\n");
  std::string sif = work / "two-stage.sif";
  auto built = build_with_apt(sif, recipe);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_TRUE(leftovers().empty());
  auto run = capsa({"run", sif});
  EXPECT_EQ(run.out, "built in stage one\n") << run.err;
  // Only the binary came across: no compiler, no Debian in the final image.
  auto gcc = capsa({"exec", sif, "sh", "-c", "test -e /usr/bin/gcc || test -e /etc/debian_version || echo clean"});
  EXPECT_EQ(gcc.out, "clean\n") << gcc.err;
  EXPECT_LT(std::filesystem::file_size(sif), 8u << 20);
}

TEST_F(Build, FailingPostShowsItsStatusAndLineAndWritesNothing) {
  std::string recipe = def("fails.def",
      "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") + "\n"
      "%post\n"
      "    echo before\n"
      "    sh -c 'exit 3'\n"
      "    echo never\n");
  std::string sif = work / "fails.sif";
  auto built = capsa({"build", sif, recipe});
  EXPECT_EQ(built.exit_code, 3);  // the script's status, as a shell would exit
  EXPECT_NE(built.err.find("fails.def:3: %post failed with exit status 3"), std::string::npos) << built.err;
  EXPECT_NE(built.err.find("+ fails.def:5: sh -c"), std::string::npos) << built.err;  // the traced line
  EXPECT_EQ(built.out.find("never"), std::string::npos) << built.out;
  EXPECT_FALSE(std::filesystem::exists(sif));
  EXPECT_TRUE(leftovers().empty());
  // Nothing next to the target either (no temporary SIF).
  for (const auto& entry : std::filesystem::directory_iterator(work.path()))
    EXPECT_EQ(entry.path().filename().string().find("fails.sif"), std::string::npos) << entry.path();
}

TEST_F(Build, BadDefinitionsAreRefusedWithFileAndLine) {
  struct Case {
    std::string text;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"Bootstrap: docker\nFrom: x\n%install\n  make\n", "bad.def:3: unknown section %install"},
      {"Bootstrap: docker\nFrom: x\nColour: blue\n", "bad.def:3: unknown header keyword \"Colour\""},
      {"Bootstrap: docker\n%post\n  true\n", "bad.def:1: Bootstrap: docker needs a From: header"},
      {"Bootstrap: yum\nOSVersion: 9\n",
       "Bootstrap: yum is not supported by capsa (supported: docker, docker-archive, oci-archive, oci, oras, "
       "library, localimage, scratch, debootstrap, busybox)"},
      {"Bootstrap: scratch\n%files\n  /no/such/file /x\n", "bad.def:3: %files: /no/such/file does not exist"},
  };
  for (const Case& c : cases) {
    std::string recipe = def("bad.def", c.text);
    auto built = capsa({"build", "-q", work / "bad.sif", recipe});
    EXPECT_EQ(built.exit_code, 1) << c.text;
    EXPECT_NE(built.err.find(c.expected), std::string::npos) << c.text << "\n" << built.err;
    EXPECT_EQ(built.err.find('\n'), built.err.size() - 1) << "one line: " << built.err;
    EXPECT_FALSE(std::filesystem::exists(work / "bad.sif"));
    EXPECT_TRUE(leftovers().empty()) << c.text;
  }
}

TEST_F(Build, ExistingTargetNeedsForce) {
  std::string recipe = def("scratch.def", "Bootstrap: scratch\n%labels\n  Kind scratch\n");
  std::string sandbox = work / "sandbox";
  std::filesystem::create_directories(sandbox + "/keep");
  auto refused = capsa({"build", "--sandbox", sandbox, recipe});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("already exists (use --force"), std::string::npos) << refused.err;
  EXPECT_TRUE(std::filesystem::exists(sandbox + "/keep"));
  auto forced = capsa({"build", "--force", "--sandbox", sandbox, recipe});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_FALSE(std::filesystem::exists(sandbox + "/keep"));
  EXPECT_TRUE(std::filesystem::exists(sandbox + "/.singularity.d/labels.json"));
  EXPECT_NE(test::read_file(sandbox + "/.singularity.d/labels.json").find("\"Kind\": \"scratch\""), std::string::npos);
  auto inspect = capsa({"inspect", "--labels", sandbox});  // inspect reads sandboxes too
  EXPECT_NE(inspect.out.find("Kind: scratch"), std::string::npos) << inspect.out << inspect.err;
}

TEST_F(Build, UpdateRunsTheDefinitionOverTheExistingSandbox) {
  std::string sandbox = work / "sandbox";
  std::string first = def("first.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") +
                                           "\n%post\n    echo first > /first\n%labels\n    Kind first\n");
  ASSERT_EQ(capsa({"build", "--sandbox", sandbox, first}).exit_code, 0);
  // No bootstrap: the header may even name another image; what the sandbox has stays.
  std::string second = def("second.def", "Bootstrap: docker\nFrom: " + registry("public/no-such-image:1") +
                                             "\n%post\n    cat /first > /second\n%runscript\n    cat /second\n");
  auto updated = capsa({"build", "--update", "--sandbox", sandbox, second});
  ASSERT_EQ(updated.exit_code, 0) << updated.err;
  EXPECT_EQ(test::read_file(sandbox + "/second"), "first\n");
  EXPECT_EQ(capsa({"run", sandbox}).out, "first\n");
  EXPECT_NE(capsa({"inspect", "--labels", sandbox}).out.find("Kind: first"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(sandbox + "/.singularity.d/bootstrap_history/Singularity0"));
  EXPECT_TRUE(leftovers().empty());
  // A %post that fails leaves the sandbox as it was.
  std::string failing = def("failing.def", "Bootstrap: scratch\n%post\n    rm /first\n    false\n");
  EXPECT_NE(capsa({"build", "--update", "--sandbox", sandbox, failing}).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(sandbox + "/first"));
  // Apptainer's refusals, one line each.
  auto not_sandbox = capsa({"build", "--update", sandbox + ".sif", second});
  EXPECT_EQ(not_sandbox.err, "capsa: error: only sandbox update is supported: --sandbox flag is missing\n");
  auto missing = capsa({"build", "--update", "--sandbox", work / "missing", second});
  EXPECT_EQ(missing.err, "capsa: error: could not update sandbox " + (work / "missing") + ": doesn't exist\n");
}

TEST_F(Build, ArchChoosesThePlatformOfTheDockerImages) {
  // public/multiplatform's /etc/arch names its platform; nothing of it runs here.
  std::string sandbox = work / "arm.sandbox";
  auto direct =
      capsa({"build", "--arch", "arm64", "--sandbox", sandbox, "docker://" + registry("public/multiplatform:latest")});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(test::read_file(sandbox + "/etc/arch"), "linux/arm64/v8\n");
  std::string recipe = def(
      "arm.def", "Bootstrap: docker\nFrom: " + registry("public/multiplatform:latest") + "\n%labels\n    Built here\n");
  std::string sif = work / "arm.sif";
  auto built = capsa({"build", "--arch", "arm64", sif, recipe});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  sif::Image image = sif::Image::open(sif);
  EXPECT_EQ(image.header().arch_name(), "arm64");
  auto labels = capsa({"inspect", "--labels", sif});
  EXPECT_NE(labels.out.find("org.label-schema.build-arch: arm64"), std::string::npos) << labels.out;
  std::string listing = squashfs_listing(sif, work);
  EXPECT_NE(listing.find("/etc/arch"), std::string::npos);
  auto arch = run_process({"sh", "-c", "\"$0\" build --sandbox \"$1\" \"$2\" >/dev/null 2>&1 && cat \"$1/etc/arch\"",
                           test::capsa_binary(), work / "again", sif});
  EXPECT_EQ(arch.out, "linux/arm64/v8\n") << arch.err;
}

TEST_F(Build, SectionRunsOnlyTheNamedSections) {
  std::string recipe = def("sections-only.def",
      "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") + "\n"
      "%post\n    exit 9\n"
      "%runscript\n    echo not written\n"
      "%labels\n    Only labels\n");
  std::string sif = work / "labels-only.sif";
  auto built = capsa({"build", "--section", "labels", sif, recipe});
  ASSERT_EQ(built.exit_code, 0) << built.err;  // the failing %post was skipped
  auto labels = capsa({"inspect", "--labels", sif});
  EXPECT_EQ(labels.exit_code, 0) << labels.err;
  EXPECT_NE(labels.out.find("Only: labels"), std::string::npos) << labels.out;
  // %runscript was skipped: the image keeps the docker base's runscript, not the recipe's.
  auto runscript = capsa({"inspect", "--runscript", sif});
  EXPECT_EQ(runscript.exit_code, 0) << runscript.err;
  EXPECT_NE(runscript.out.find("OCI_CMD="), std::string::npos) << runscript.out;
  EXPECT_EQ(runscript.out.find("not written"), std::string::npos) << runscript.out;
  auto failing = capsa({"build", "--section", "post,labels", work / "post.sif", recipe});
  EXPECT_NE(failing.err.find("%post failed with exit status 9"), std::string::npos) << failing.err;
}

TEST_F(Build, FixPermsGivesTheOwnerAccessToWhatADockerImageBrings) {
  // The layers test image holds /secret with mode 0000 and /private-dir with 0700.
  auto plain = capsa({"build", "--sandbox", work / "plain", "docker://" + registry("public/layers:latest")});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  auto fixed =
      capsa({"build", "--fix-perms", "--sandbox", work / "fixed", "docker://" + registry("public/layers:latest")});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  auto mode_of = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode_of(work / "plain/secret"), 0000u);
  EXPECT_EQ(mode_of(work / "fixed/secret"), 0600u) << "u+rw, no x for a file nobody could run";
  EXPECT_EQ(mode_of(work / "fixed/private-dir"), 0700u);
  EXPECT_EQ(mode_of(work / "fixed/bin/tool"), 0755u) << "what had access keeps it";
  // Into a SIF too (through an unpacked tree, where a plain docker -> SIF build is a pull).
  auto sif = capsa({"build", "--fix-perms", work / "fixed.sif", "docker://" + registry("public/layers:latest")});
  ASSERT_EQ(sif.exit_code, 0) << sif.err;
  auto back = capsa({"build", "--sandbox", work / "from-sif", work / "fixed.sif"});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(mode_of(work / "from-sif/secret"), 0600u);
}

TEST_F(Build, BusyboxBootstrapFromMirrorUrl) {
  // Debian's static busybox stands for busybox.net's binaries (no network in the tests).
  std::string recipe = def("busybox.def",
                           "Bootstrap: busybox\nMirrorURL: file:///bin/busybox\n"
                           "%post\n    echo made in post > /etc/post\n"
                           "%runscript\n    echo hello from a busybox bootstrap\n");
  auto built = capsa({"build", work / "busybox.sif", recipe});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  auto ran = capsa({"run", work / "busybox.sif"});
  EXPECT_EQ(ran.out, "hello from a busybox bootstrap\n") << ran.err;
  auto inside = capsa({"exec", work / "busybox.sif", "sh", "-c",
                       "cat /etc/post; head -c 9 /etc/hosts; echo; [ /bin/ls -ef /bin/busybox ] && echo linked"});
  EXPECT_EQ(inside.out, "made in post\n127.0.0.1\nlinked\n") << inside.err;

  std::string missing = def("missing.def", "Bootstrap: busybox\nMirrorURL: file:///nonexistent/busybox\n");
  auto failed = capsa({"build", work / "missing.sif", missing});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.err.find("downloading file:///nonexistent/busybox"), std::string::npos) << failed.err;
  EXPECT_FALSE(std::filesystem::exists(work / "missing.sif"));
  EXPECT_TRUE(leftovers().empty());
  std::string no_url = def("no-url.def", "Bootstrap: busybox\n");
  auto refused = capsa({"build", work / "no-url.sif", no_url});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("no-url.def:1: Bootstrap: busybox needs MirrorURL:"), std::string::npos) << refused.err;
}

TEST_F(Build, BuildFlagsNotestTmpdirDisableCacheAndNohttps) {
  std::string recipe =
      def("flags.def", "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") + "\n%test\n    exit 7\n");
  std::string own_tmp = work / "own-tmp";
  std::filesystem::create_directories(own_tmp);
  // Without APPTAINER_NOHTTPS (which capsa() sets): only --nohttps lets it reach the plain registry.
  auto build = [&](std::vector<std::string> flags, const std::string& target) {
    std::vector<std::string> argv = {"env",
                                     "-u",
                                     "APPTAINER_NOHTTPS",
                                     "-u",
                                     "SINGULARITY_NOHTTPS",
                                     "CAPSA_CACHEDIR=" + cache,
                                     "TMPDIR=" + tmp,
                                     test::capsa_binary(),
                                     "build"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {target, recipe});
    return run_process(argv, "", 900);
  };
  auto tested = build({"--nohttps", "--disable-cache"}, work / "tested.sif");
  EXPECT_NE(tested.exit_code, 0);
  EXPECT_NE(tested.err.find("%test"), std::string::npos) << tested.err;
  EXPECT_FALSE(std::filesystem::exists(work / "tested.sif"));
  auto https = build({"-T", "--disable-cache"}, work / "https.sif");
  EXPECT_NE(https.exit_code, 0) << "the plain registry does not speak HTTPS";
  auto built = build({"-T", "--nohttps", "--disable-cache", "--tmpdir", own_tmp}, work / "flags.sif");
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_GT(std::filesystem::file_size(work / "flags.sif"), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(own_tmp)) << "the build tree under --tmpdir is removed";
  EXPECT_TRUE(!std::filesystem::exists(cache) ||
              capsa({"cache", "list"}).out.find("There are 0 container file(s)") != std::string::npos)
      << "--disable-cache keeps nothing";
  // Registry credentials for a private base image: flags, or a Docker config.json.
  const auto& reg = test::test_registry();
  auto private_build = [&](std::vector<std::string> flags, const std::string& target) {
    std::vector<std::string> argv = {"env",
                                     "-u",
                                     "APPTAINER_NOHTTPS",
                                     "CAPSA_CACHEDIR=" + cache,
                                     "TMPDIR=" + tmp,
                                     "CAPSA_REGISTRY_CA=" + reg.ca_file,
                                     test::capsa_binary(),
                                     "build"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {target, "docker://" + reg.token + "/private/busybox:1.0"});
    return run_process(argv, "", 900);
  };
  auto with_flags =
      private_build({"--docker-username", "$oauthtoken", "--docker-password", reg.api_key}, work / "private.sif");
  EXPECT_EQ(with_flags.exit_code, 0) << with_flags.err;
  std::string auth = run_process({"sh", "-c", "printf %s \"$0\" | base64 -w0", "$oauthtoken:" + reg.api_key}).out;
  std::string authfile = work.write("auth.json", "{\"auths\": {\"" + reg.token + "\": {\"auth\": \"" + auth + "\"}}}");
  auto with_authfile = private_build({"--authfile", authfile}, work / "private-authfile.sif");
  EXPECT_EQ(with_authfile.exit_code, 0) << with_authfile.err;
  auto anonymous = private_build({}, work / "private-anonymous.sif");
  EXPECT_NE(anonymous.exit_code, 0) << "the repository is private";

  auto missing_tmp = build({"-T", "--nohttps", "--tmpdir", work / "no-such-dir"}, work / "never.sif");
  EXPECT_NE(missing_tmp.exit_code, 0);
  EXPECT_NE(missing_tmp.err.find(work / "no-such-dir"), std::string::npos)
      << "--tmpdir is where the tree goes: " << missing_tmp.err;
}

// The first Debian mirror this machine's apt names (deb822 or one-line format).
std::string host_debian_mirror() {
  auto found = run_process({"sh", "-c",
      "cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2; exit}'; "
      "cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1 == \"deb\" {print $2; exit}'"});
  std::istringstream lines(found.out);
  std::string first;
  std::getline(lines, first);
  return first.empty() ? "http://deb.debian.org/debian" : first;
}

TEST_F(Build, DebootstrapMakesADebianImage) {
  if (!is_root()) GTEST_SKIP() << "debootstrap needs real root (device nodes, chroot as root)";
  if (!test::have_program("debootstrap")) GTEST_SKIP() << "debootstrap is not installed";
  std::string recipe = def("debootstrap.def",
      "Bootstrap: debootstrap\nOSVersion: bookworm\nMirrorURL: " + host_debian_mirror() + "\nInclude: hello\n"
      "%runscript\n    exec hello\n");
  std::string sif = work / "debootstrap.sif";
  auto built = capsa({"build", "-q", sif, recipe}, {}, 1800);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_TRUE(leftovers().empty());
  auto run = capsa({"run", sif});
  EXPECT_EQ(run.out, "Hello, world!\n") << run.err;
  EXPECT_NE(capsa({"inspect", "--labels", sif}).out.find("org.label-schema.usage.singularity.deffile.osversion: bookworm"),
            std::string::npos);
}

TEST_F(Build, ConversionsSifToSandboxToSif) {
  std::string first = work / "busybox.sif";
  auto pulled = capsa({"build", first, "docker://" + registry("public/busybox:1.0")});
  ASSERT_EQ(pulled.exit_code, 0) << pulled.err;
  std::string sandbox = work / "busybox.sandbox";
  auto unpacked = capsa({"build", "--sandbox", sandbox, first});
  ASSERT_EQ(unpacked.exit_code, 0) << unpacked.err;
  EXPECT_TRUE(std::filesystem::exists(sandbox + "/bin/busybox"));
  std::filesystem::path marker = std::filesystem::path(sandbox) / "added-in-sandbox";
  { std::ofstream(marker) << "yes\n"; }
  std::string second = work / "again.sif";
  auto packed = capsa({"build", second, sandbox});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  auto run = capsa({"exec", second, "cat", "/added-in-sandbox"});
  EXPECT_EQ(run.out, "yes\n") << run.err;
  EXPECT_EQ(owner_of(squashfs_listing(second, work), "/bin/busybox"), "0/0");
  EXPECT_EQ(run_process({"siftool", "list", second}).exit_code, 0);
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(Build, InterruptedBuildLeavesNoTemporaryDirectory) {
  std::string started = work / "started";
  std::filesystem::create_directories(started);
  std::string recipe = def("slow.def",
      "Bootstrap: docker\nFrom: " + registry("public/busybox:1.0") + "\n"
      "%post\n    touch /signal/post-started\n    sleep 120\n");
  std::string sif = work / "slow.sif";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group, like a job in a terminal
    std::string a = "CAPSA_CACHEDIR=" + cache, b = "TMPDIR=" + tmp, c = "APPTAINER_NOHTTPS=1";
    ::execl("/usr/bin/env", "env", a.c_str(), b.c_str(), c.c_str(), test::capsa_binary().c_str(), "build", "--bind",
            (started + ":/signal").c_str(), sif.c_str(), recipe.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  bool seen = false;
  for (int i = 0; i < 1200 && !seen; ++i) {
    seen = std::filesystem::exists(started + "/post-started");
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(seen) << "%post never started";
  ::kill(-pid, SIGINT);  // what Ctrl-C does: the whole foreground group
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  EXPECT_FALSE(std::filesystem::exists(sif));
  EXPECT_TRUE(leftovers().empty());
}

}  // namespace
}  // namespace capsa::build
