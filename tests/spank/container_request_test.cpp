// The SPANK plugin's options (spank/container_request.hpp): pyxis' forms read into a
// request, bad values refused with one line naming the option, and the capsa command
// lines that follow.
#include "spank/container_request.hpp"

#include <gtest/gtest.h>

namespace capsa::spank {
namespace {

ContainerRequest request_of(const std::vector<std::pair<std::string, const char*>>& options) {
  ContainerRequest request;
  for (const auto& [name, value] : options) apply_option(request, name, value);
  return request;
}

// The message of the RequestError `apply` throws, or "" when it throws none.
std::string refusal(const std::string& option, const char* value) {
  ContainerRequest request;
  try {
    apply_option(request, option, value);
  } catch (const RequestError& e) {
    return e.what();
  }
  return "";
}

TEST(ContainerImage, PyxisFormsBecomeCapsaReferences) {
  EXPECT_EQ(capsa_image("docker://ubuntu:22.04"), "docker://ubuntu:22.04");
  EXPECT_EQ(capsa_image("ubuntu:22.04"), "docker://ubuntu:22.04");
  EXPECT_EQ(capsa_image("nvcr.io#nvidia/pytorch:23.01-py3"), "docker://nvcr.io/nvidia/pytorch:23.01-py3");
  EXPECT_EQ(capsa_image("docker://127.0.0.1:5000#public/busybox"), "docker://127.0.0.1:5000/public/busybox");
  EXPECT_EQ(capsa_image("oras://ghcr.io/a/b:1"), "oras://ghcr.io/a/b:1");
  EXPECT_EQ(capsa_image("library://alpine"), "library://alpine");
  EXPECT_EQ(capsa_image("/scratch/img.sif"), "/scratch/img.sif");
}

TEST(ContainerImage, UnusableFormsAreRefusedWithTheReason) {
  EXPECT_THROW(capsa_image("./img.sif"), RequestError);
  EXPECT_THROW(capsa_image("dockerd://ubuntu"), RequestError);
  EXPECT_THROW(capsa_image("docker://"), RequestError);
  try {
    capsa_image("docker://alice@nvcr.io#nvidia/cuda");
    FAIL() << "a user name was taken";
  } catch (const RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("capsa registry login"), std::string::npos) << e.what();
  }
}

TEST(ContainerMounts, SourceDestinationAndFlag) {
  auto mounts = parse_mounts("/data:/in:ro,/scratch,/work:/w:rw");
  ASSERT_EQ(mounts.size(), 3u);
  EXPECT_EQ(mounts[0].bind_spec(), "/data:/in:ro");
  EXPECT_EQ(mounts[1].bind_spec(), "/scratch:/scratch");
  EXPECT_EQ(mounts[2].bind_spec(), "/work:/w");
}

TEST(ContainerMounts, BadEntriesAreRefused) {
  for (const char* bad : {"", "/a,,/b", "data:/in", "/data:in", "/a:/b:ro:x", "/a:/b:rprivate", "/a:"}) {
    EXPECT_THROW(parse_mounts(bad), RequestError) << bad;
  }
  EXPECT_NE(refusal("container-mounts", "/a:/b:x-create=dir").find("--container-mounts"), std::string::npos);
}

TEST(ContainerEnv, NamesOnly) {
  EXPECT_EQ(parse_env_names("PATH,LD_LIBRARY_PATH,_X1"), (std::vector<std::string>{"PATH", "LD_LIBRARY_PATH", "_X1"}));
  for (const char* bad : {"", "A,", "1A", "A=B", "A-B"}) EXPECT_THROW(parse_env_names(bad), RequestError) << bad;
}

TEST(Options, EveryOptionSetsItsField) {
  auto request = request_of({{"container-image", "/i.sif"},
                             {"container-mounts", "/a:/b"},
                             {"container-mounts", "/c"},
                             {"container-workdir", "/w"},
                             {"container-name", "build.1"},
                             {"container-writable", nullptr},
                             {"container-remap-root", nullptr},
                             {"container-env", "PATH"},
                             {"no-container-mount-home", nullptr}});
  EXPECT_EQ(request.image, "/i.sif");
  EXPECT_EQ(request.mounts.size(), 2u);
  EXPECT_EQ(request.workdir, "/w");
  EXPECT_EQ(request.name, "build.1");
  EXPECT_TRUE(request.writable);
  EXPECT_TRUE(request.remap_root);
  EXPECT_EQ(request.env_names, std::vector<std::string>{"PATH"});
  EXPECT_FALSE(request.mount_home);
  EXPECT_TRUE(request.wanted());
  auto undone = request_of(
      {{"container-readonly", nullptr}, {"no-container-remap-root", nullptr}, {"container-mount-home", nullptr}});
  EXPECT_FALSE(undone.writable);
  EXPECT_FALSE(undone.remap_root);
  EXPECT_TRUE(undone.mount_home);
  EXPECT_FALSE(undone.wanted());
}

TEST(Options, BadValuesNameTheOption) {
  EXPECT_NE(refusal("container-image", nullptr).find("--container-image needs a value"), std::string::npos);
  EXPECT_NE(refusal("container-workdir", "rel").find("--container-workdir"), std::string::npos);
  EXPECT_NE(refusal("container-name", "a:no_create").find("--container-name"), std::string::npos);
  EXPECT_NE(refusal("container-name", "../x").find("--container-name"), std::string::npos);
  EXPECT_NE(refusal("container-name", ".hidden").find("--container-name"), std::string::npos);
  EXPECT_NE(refusal("container-workdir", "/a\nb").find("newline"), std::string::npos);
  EXPECT_NE(refusal("container-save", nullptr).find("--container-save needs a value"), std::string::npos);
  EXPECT_NE(refusal("container-save", "/scratch/").find("--container-save"), std::string::npos);
  EXPECT_NE(refusal("container-entrypoint-log", nullptr).find("not an option"), std::string::npos);
  EXPECT_EQ(refusal("container-name", "ok_name-1.2"), "");
}

TEST(CommandLines, InstanceStartCarriesTheStepOptions) {
  auto request = request_of({{"container-image", "/i.sif"},
                             {"container-mounts", "/a:/b:ro"},
                             {"container-writable", nullptr},
                             {"container-remap-root", nullptr},
                             {"no-container-mount-home", nullptr}});
  EXPECT_EQ(instance_start_argv("/bin/capsa", request, request.image, "spank-7.0", nullptr),
            (std::vector<std::string>{"/bin/capsa", "instance", "start", "--bind", "/a:/b:ro", "--no-home",
                                      "--fakeroot", "--writable-tmpfs", "/i.sif", "spank-7.0"}));
  NamedState named{"/tmp/state/n"};
  EXPECT_EQ(instance_start_argv("/bin/capsa", request, request.image, "spank-7.1", &named),
            (std::vector<std::string>{"/bin/capsa", "instance", "start", "--bind", "/a:/b:ro", "--no-home",
                                      "--fakeroot", "--overlay", "/tmp/state/n", "/i.sif", "spank-7.1"}));
  request.writable = false;
  EXPECT_EQ(instance_start_argv("/bin/capsa", request, request.image, "spank-7.1", &named)[8], "/tmp/state/n:ro");
}

TEST(CommandLines, TheTaskJoinsTheInstanceWithItsOwnArgv) {
  auto request = request_of({{"container-image", "/i.sif"}, {"container-workdir", "/w d"}});
  const auto prefix = task_exec_prefix("/bin/capsa", request, instance_name(12, 3));
  EXPECT_EQ(prefix, (std::vector<std::string>{"/bin/capsa", "exec", "--pwd", "/w d", "instance://spank-12.3"}));
  const auto decoded = decode_words(encode_words(prefix));
  EXPECT_EQ(decoded, prefix);
  EXPECT_EQ(
      task_argv(decoded, "hostname", {"-s", ""}),
      (std::vector<std::string>{"/bin/capsa", "exec", "--pwd", "/w d", "instance://spank-12.3", "hostname", "-s", ""}));
  EXPECT_THROW(encode_words({"a\nb"}), RequestError);
}

TEST(Options, SaveAndEntrypoint) {
  auto request = request_of({{"container-image", "/i.sif"}, {"container-save", "out/x.sqsh"}});
  EXPECT_EQ(request.save_path, "out/x.sqsh");
  EXPECT_FALSE(request.entrypoint);  // pyxis' default
  EXPECT_TRUE(request_of({{"container-entrypoint", nullptr}}).entrypoint);
  EXPECT_FALSE(request_of({{"container-entrypoint", nullptr}, {"no-container-entrypoint", nullptr}}).entrypoint);
}

TEST(Options, ValuesInheritedTwiceAreNotDoubled) {
  // sbatch's and salloc's options come back to each srun through the environment.
  auto request = request_of({{"container-mounts", "/a:/b:ro"},
                             {"container-mounts", "/a:/b:ro,/c"},
                             {"container-env", "A,B"},
                             {"container-env", "B"}});
  EXPECT_EQ(request.mounts.size(), 2u);
  EXPECT_EQ(request.env_names, (std::vector<std::string>{"A", "B"}));
}

TEST(Options, FlagsTravelAsTheCommandLineLeftThem) {
  auto given = request_of({{"container-image", "/i.sif"},
                           {"no-container-mount-home", nullptr},
                           {"container-mount-home", nullptr},
                           {"container-writable", nullptr},
                           {"container-entrypoint", nullptr}});
  const std::string flags = encode_flags(given);
  EXPECT_EQ(flags, "writable=1,remap-root=0,mount-home=1,entrypoint=1");
  // slurmstepd's order: the table's, not the command line's.
  auto remote = request_of({{"container-image", "/i.sif"},
                            {"container-writable", nullptr},
                            {"container-mount-home", nullptr},
                            {"no-container-mount-home", nullptr},
                            {"container-entrypoint", nullptr}});
  EXPECT_FALSE(remote.mount_home);
  apply_flags(remote, flags);
  EXPECT_TRUE(remote.mount_home);
  EXPECT_TRUE(remote.writable);
  EXPECT_TRUE(remote.entrypoint);
  apply_flags(remote, "mount-home=x,bogus=1,writable,entrypoint=0");
  EXPECT_TRUE(remote.mount_home);
  EXPECT_TRUE(remote.writable);
  EXPECT_FALSE(remote.entrypoint);
}

TEST(Options, ListsTravelAsTheCommandLinesGatheredThem) {
  auto given = request_of({{"container-mounts", "/a:/a"},
                           {"container-mounts", "/c:/d:ro"},
                           {"container-env", "A"},
                           {"container-env", "B"}});
  EXPECT_EQ(joined_mounts(given), "/a:/a,/c:/d:ro");
  EXPECT_EQ(joined_env_names(given), "A,B");
  EXPECT_EQ(parse_mounts(joined_mounts(given)).size(), 2u);
  EXPECT_EQ(joined_mounts(ContainerRequest{}), "");
}

TEST(CommandLines, TheEntrypointRunsTheImagesRunscript) {
  auto request = request_of({{"container-image", "/i.sif"}, {"container-entrypoint", nullptr}});
  EXPECT_EQ(task_exec_prefix("/bin/capsa", request, "spank-1.0"),
            (std::vector<std::string>{"/bin/capsa", "run", "instance://spank-1.0"}));
}

TEST(CommandLines, SaveTargetIsTheJobsDirectorysWhenRelative) {
  EXPECT_EQ(save_target("/s/x.sqsh", "/home/u"), "/s/x.sqsh");
  EXPECT_EQ(save_target("x.sqsh", "/home/u"), "/home/u/x.sqsh");
  EXPECT_EQ(save_target("d/x.sqsh", "/home/u/"), "/home/u/d/x.sqsh");
  EXPECT_THROW(save_target("x.sqsh", ""), RequestError);
  EXPECT_EQ(instance_save_argv("/bin/capsa", "spank-4.0", "/s/x.sqsh"),
            (std::vector<std::string>{"/bin/capsa", "instance", "save", "spank-4.0", "/s/x.sqsh"}));
}

}  // namespace
}  // namespace capsa::spank
